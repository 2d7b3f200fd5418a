//! What is checked before any command of a unit runs: that nothing the pull
//! request committed becomes a tool, and that the unit's directory is inside
//! its tree. Also cascade's own record of which units it initialised, the
//! only thing that decides whether `init` runs.
//!
//! terraform installs and runs providers from `terraform.d/plugins` in its
//! working directory (its implied local mirror) and from `.terraform/` (an
//! initialised directory), and terragrunt copies a module source, with both,
//! into the directory terraform runs in. So a `terraform.d/` in a unit or a
//! module directory it uses is refused outright, and so is a `.terraform/`
//! the repository tracks. A `.terraform/` cascade did not make (by its
//! record) is initialised again, never trusted. Never runs anything.

use super::{ExecError, UnitJob};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Refuses `job` when its directory leaves its tree, or when it or a module
/// directory it uses holds a `terraform.d/` or a committed `.terraform/`.
pub(super) fn check(
    job: &UnitJob,
    tracked: &TrackedTools,
    records: &InitRecords,
) -> Result<(), ExecError> {
    let (root, dir) = inside_tree(job)?;
    let committed = match tracked.dirs(&root) {
        Some(dirs) => dirs,
        // Not a git work tree: cascade wrote every file of it from the
        // repository, so a `.terraform/` its record does not account for came
        // from there too.
        None if records.foreign(job) => {
            let rel = dir.strip_prefix(&root).unwrap_or(Path::new(""));
            let mut dirs = BTreeSet::new();
            dirs.insert(rel.to_path_buf());
            Arc::new(dirs)
        }
        None => Arc::default(),
    };
    for source in std::iter::once(&job.dir).chain(&job.sources) {
        let Ok(real) = std::fs::canonicalize(source) else {
            continue;
        };
        // A module source outside the tree is discovery's to refuse; it holds no
        // file of this pull request's.
        let Ok(rel) = real.strip_prefix(&root) else {
            continue;
        };
        let shown = shown(rel);
        if std::fs::symlink_metadata(real.join("terraform.d")).is_ok() {
            return Err(ExecError::Refused {
                reason: format!(
                    "`{shown}terraform.d` is a provider directory committed with the change: terraform would install and run the providers in it, so cascade refuses to run this unit; remove it (providers come from their registry, checked against `.terraform.lock.hcl`)"
                ),
            });
        }
        if committed.contains(rel) {
            return Err(ExecError::Refused {
                reason: format!(
                    "`{shown}.terraform` is committed to the repository: terraform would run the providers and modules it holds, so cascade refuses to run this unit; remove it (`git rm -r --cached {shown}.terraform`) and list `.terraform/` in `.gitignore`"
                ),
            });
        }
    }
    Ok(())
}

/// The job's tree and directory, both resolved, when the directory is inside
/// the tree; refused otherwise (a link, or a `..` a unit path should never
/// hold, leading elsewhere: another pull request's checkout, a directory next
/// to the repository). Every command's directory passes here before it starts.
pub(super) fn inside_tree(job: &UnitJob) -> Result<(PathBuf, PathBuf), ExecError> {
    let root = std::fs::canonicalize(&job.root).map_err(|source| ExecError::Log { source })?;
    let outside = || ExecError::Refused {
        reason: format!(
            "the directory of `{}` resolves outside its checkout (through a symbolic link or `..`), so cascade runs nothing there; make it a real directory of the repository, or rename it if its name holds `..`",
            job.unit
        ),
    };
    let dir = std::fs::canonicalize(&job.dir).map_err(|_| outside())?;
    if !dir.starts_with(&root) {
        return Err(outside());
    }
    Ok((root, dir))
}

fn shown(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        String::new()
    } else {
        format!("{}/", rel.display())
    }
}

/// The directories holding a tracked `.terraform/`, per tree, read from the
/// tree's git index and kept while the index is unchanged. A tree that is not
/// a git work tree (a base revision cascade wrote out) has no index; there a
/// `.terraform/` cascade's record does not account for counts as committed,
/// since cascade wrote every other file of it from the repository.
#[derive(Default)]
pub(super) struct TrackedTools {
    by_root: Mutex<HashMap<PathBuf, Tracked>>,
}

/// One tree's directories with a tracked `.terraform/`, as of its index's
/// modification time.
type Tracked = (Option<SystemTime>, Arc<BTreeSet<PathBuf>>);

impl TrackedTools {
    /// `None` when `root` is not a git work tree.
    fn dirs(&self, root: &Path) -> Option<Arc<BTreeSet<PathBuf>>> {
        let repo = git2::Repository::open(root).ok()?;
        let index_file = repo.path().join("index");
        let stamp = std::fs::metadata(&index_file)
            .and_then(|m| m.modified())
            .ok();
        let mut cache = self.by_root.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, dirs)) = cache.get(root)
            && *seen == stamp
            && stamp.is_some()
        {
            return Some(dirs.clone());
        }
        let mut dirs = BTreeSet::new();
        if let Ok(index) = repo.index() {
            for entry in index.iter() {
                let path = String::from_utf8_lossy(&entry.path).into_owned();
                let mut parts: Vec<&str> = path.split('/').collect();
                parts.pop();
                if let Some(at) = parts.iter().position(|p| *p == ".terraform") {
                    dirs.insert(parts[..at].iter().collect::<PathBuf>());
                }
            }
        }
        let dirs = Arc::new(dirs);
        cache.insert(root.to_path_buf(), (stamp, dirs.clone()));
        Some(dirs)
    }
}

/// cascade's record of the units it initialised: per unit directory and
/// `init` arguments, the identity (device, inode) of the `.terraform/`
/// directory its last successful `init` left. Kept in the executor's private
/// directory, where no command can write.
pub(super) struct InitRecords {
    dir: PathBuf,
}

impl InitRecords {
    pub fn new(dir: PathBuf) -> InitRecords {
        InitRecords { dir }
    }

    fn file(&self, job: &UnitJob) -> PathBuf {
        let mut hash = Sha256::new();
        hash.update(job.dir.as_os_str().as_encoded_bytes());
        for arg in &job.init_args {
            hash.update(b"\0");
            hash.update(arg.as_bytes());
        }
        self.dir.join(&hex::encode(hash.finalize())[..32])
    }

    /// True when the unit's `.terraform/` is the one cascade's last `init` of
    /// it made.
    pub fn initialised(&self, job: &UnitJob) -> bool {
        let Some(now) = identity(&job.dir.join(".terraform")) else {
            return false;
        };
        std::fs::read_to_string(self.file(job)).is_ok_and(|text| text.trim() == now)
    }

    /// A `.terraform/` is there that cascade's record does not account for.
    pub fn foreign(&self, job: &UnitJob) -> bool {
        identity(&job.dir.join(".terraform")).is_some() && !self.initialised(job)
    }

    /// Records the `.terraform/` a successful `init` of `job` left.
    pub fn record(&self, job: &UnitJob) {
        let Some(now) = identity(&job.dir.join(".terraform")) else {
            return;
        };
        if super::step_process::private_dir(&self.dir).is_ok() {
            let _ = std::fs::write(self.file(job), now);
        }
    }

    /// Forgets `job`'s record (its `init` is about to run again).
    pub fn forget(&self, job: &UnitJob) {
        let _ = std::fs::remove_file(self.file(job));
    }
}

/// A directory's identity, `device:inode`, when it is a real directory.
fn identity(dir: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(dir).ok()?;
    meta.is_dir()
        .then(|| format!("{}:{}", meta.dev(), meta.ino()))
}
