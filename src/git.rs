//! Reading revisions and diffs from a local git repository with git2.
//!
//! Owns: resolving revspecs, the merge-base ("three-dot") diff of a pull request,
//! and writing the tree of another revision into a scratch directory so the graph
//! can be discovered there.
//! Must never: talk to the network (fetching is the git CLI's job, with the
//! installation token), or modify the repository's index, HEAD or worktree: the
//! bot and a developer may be using that checkout at the same time.

use anyhow::{Context, anyhow, bail};
use git2::{Commit, Delta, DiffFindOptions, ErrorCode, Repository};
use std::path::{Path, PathBuf};

/// One changed path between the merge-base and the head.
///
/// Paths are relative to the git top-level and `/`-separated.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    Added(String),
    Modified(String),
    Deleted(String),
    /// A file moved (possibly with edits); both names matter, because a unit may
    /// read the old name and another the new one.
    Renamed {
        from: String,
        to: String,
    },
}

impl Change {
    /// The paths this change touches: both names for a rename.
    pub fn paths(&self) -> Vec<&str> {
        match self {
            Change::Added(p) | Change::Modified(p) | Change::Deleted(p) => vec![p.as_str()],
            Change::Renamed { from, to } => vec![from.as_str(), to.as_str()],
        }
    }
}

/// The changes a pull request makes: `head` against its merge-base with the base branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeSet {
    /// The merge-base commit (full sha), not the base branch's tip.
    pub base: String,
    /// The head commit (full sha).
    pub head: String,
    /// The changes, sorted by path (the new path for a rename).
    pub changes: Vec<Change>,
}

impl ChangeSet {
    /// Every path touched (both names of a rename), sorted, without duplicates:
    /// the input `affected` expects when discovery runs at the git top-level.
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self
            .changes
            .iter()
            .flat_map(|c| c.paths())
            .map(str::to_owned)
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    /// True when a unit's or a stack's file is deleted or renamed away: the base revision
    /// must then be discovered too, to plan what the change destroys.
    pub fn deletes_a_unit(&self) -> bool {
        self.changes.iter().any(|c| match c {
            Change::Deleted(p) | Change::Renamed { from: p, .. } => {
                p.ends_with("terragrunt.hcl") || p.ends_with("terragrunt.stack.hcl")
            }
            _ => false,
        })
    }

    /// Like [`ChangeSet::paths`], but relative to `prefix`, a directory relative
    /// to the git top-level (the discovery directory, when it is not the
    /// top-level). Paths outside `prefix` get `..` components, because a unit
    /// may read files above the discovery directory.
    pub fn paths_relative_to(&self, prefix: &str) -> Vec<String> {
        let mut paths: Vec<String> = self
            .paths()
            .iter()
            .map(|p| relative_to_prefix(p, prefix))
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

/// `path` (a file, relative to the git top-level) relative to `prefix` (a directory
/// relative to the top-level), with `..` components when it lies outside `prefix`.
pub fn relative_to_prefix(path: &str, prefix: &str) -> String {
    let prefix: Vec<&str> = prefix
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    relative_to(path, &prefix)
}

fn relative_to(path: &str, prefix: &[&str]) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    // The last component is the file itself, never a directory shared with the prefix.
    let common = prefix
        .iter()
        .zip(&parts[..parts.len() - 1])
        .take_while(|(a, b)| a == b)
        .count();
    let ups = std::iter::repeat_n("..", prefix.len() - common);
    ups.chain(parts[common..].iter().copied())
        .collect::<Vec<_>>()
        .join("/")
}

/// Opens the repository that contains `dir` (searching upward) and returns its
/// top-level (worktree root); `None` outside a repository or in a bare one.
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    let repo = Repository::discover(dir).ok()?;
    // git2 reports the workdir with a trailing slash; rebuilding from the
    // components gives the plain form callers compare and join against.
    repo.workdir().map(|w| w.components().collect())
}

/// The messages of the commits in `base..head`, newest first, at most `limit` of them.
pub fn messages_between(
    dir: &Path,
    base: &str,
    head: &str,
    limit: usize,
) -> anyhow::Result<Vec<String>> {
    let repo = open(dir)?;
    let mut walk = repo.revwalk()?;
    walk.push(commit(&repo, head)?.id())?;
    walk.hide(commit(&repo, base)?.id())?;
    let mut messages = Vec::new();
    for oid in walk.take(limit) {
        let found = repo.find_commit(oid?)?;
        messages.push(String::from_utf8_lossy(found.message_bytes()).into_owned());
    }
    Ok(messages)
}

/// The merge-base diff of `head` against `base` (any revspec: branch, tag, sha,
/// `HEAD~2`), with rename detection on and deletions included.
///
/// The merge-base matters: a two-dot diff would include everything the base
/// branch did since the branch point, and plan units the PR never touched.
pub fn changed_files(dir: &Path, base: &str, head: &str) -> anyhow::Result<ChangeSet> {
    let repo = open(dir)?;
    let base_commit = commit(&repo, base)?;
    let head_commit = commit(&repo, head)?;
    let merge_base = match repo.merge_base(base_commit.id(), head_commit.id()) {
        Ok(oid) => oid,
        Err(e) if e.code() == ErrorCode::NotFound => bail!(
            "`{base}` and `{head}` share no history (no merge-base): \
             check that the head branch was created from `{base}`, or fetch more history if the clone is shallow"
        ),
        Err(e) => {
            return Err(e)
                .with_context(|| format!("finding the merge-base of `{base}` and `{head}`"));
        }
    };
    let base_tree = repo.find_commit(merge_base)?.tree()?;
    let head_tree = head_commit.tree()?;
    let mut diff = repo
        .diff_tree_to_tree(Some(&base_tree), Some(&head_tree), None)
        .with_context(|| format!("diffing `{head}` against its merge-base with `{base}`"))?;
    // Explicit options, so a user's `diff.renames = false` cannot change what we plan.
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))
        .context("detecting renames")?;

    let mut changes = Vec::with_capacity(diff.deltas().len());
    for delta in diff.deltas() {
        let old = delta.old_file().path_bytes().map(path_string);
        let new = delta.new_file().path_bytes().map(path_string);
        let change = match (delta.status(), old, new) {
            (Delta::Added, _, Some(p)) => Change::Added(p),
            (Delta::Deleted, Some(p), _) => Change::Deleted(p),
            (Delta::Renamed, Some(from), Some(to)) => Change::Renamed { from, to },
            // A copy leaves the source untouched, so only the new name changed.
            (Delta::Copied, _, Some(p)) => Change::Added(p),
            // Modified, a file turned symlink (Typechange), a submodule moved.
            (_, old, new) => match new.or(old) {
                Some(p) => Change::Modified(p),
                None => continue,
            },
        };
        changes.push(change);
    }
    changes.sort_by(|a, b| sort_key(a).cmp(sort_key(b)).then_with(|| a.cmp(b)));
    Ok(ChangeSet {
        base: merge_base.to_string(),
        head: head_commit.id().to_string(),
        changes,
    })
}

fn sort_key(change: &Change) -> &str {
    match change {
        Change::Added(p) | Change::Modified(p) | Change::Deleted(p) => p,
        Change::Renamed { to, .. } => to,
    }
}

/// Writes the tree of `rev` into `dest` (an empty directory), leaving the
/// repository's index, HEAD and worktree alone. Used to discover the graph at
/// the base revision, for units the PR deletes.
pub fn materialize(dir: &Path, rev: &str, dest: &Path) -> anyhow::Result<()> {
    let repo = open(dir)?;
    let tree = commit(&repo, rev)?.tree()?;
    if dest.exists() {
        let mut entries =
            std::fs::read_dir(dest).with_context(|| format!("reading `{}`", dest.display()))?;
        if entries.next().is_some() {
            bail!(
                "cannot write `{rev}` into `{}`: the directory is not empty; use a new, empty directory",
                dest.display()
            );
        }
    } else {
        std::fs::create_dir_all(dest).with_context(|| format!("creating `{}`", dest.display()))?;
    }
    let mut checkout = git2::build::CheckoutBuilder::new();
    // `force` writes every file of the tree: `dest` holds none of them yet, and
    // the safe mode would compare against the repository's own worktree.
    checkout.target_dir(dest).update_index(false).force();
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .with_context(|| format!("writing the files of `{rev}` into `{}`", dest.display()))
}

/// Writes only the files of `rev` under `paths` (repo-relative directories) into `dest`
/// (an empty directory), as [`materialize`] writes all of them: for the default branch's
/// policy directories, which must not cost a copy of the whole repository.
pub fn materialize_paths(dir: &Path, rev: &str, dest: &Path, paths: &[&str]) -> anyhow::Result<()> {
    let repo = open(dir)?;
    let tree = commit(&repo, rev)?.tree()?;
    std::fs::create_dir_all(dest).with_context(|| format!("creating `{}`", dest.display()))?;
    if paths.is_empty() {
        return Ok(());
    }
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.target_dir(dest).update_index(false).force();
    // Each path is a pathspec: a directory matches everything under it. The paths come
    // from the default branch's `.cascade.yaml`, never from a pull request.
    for path in paths {
        checkout.path(*path);
    }
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .with_context(|| format!("writing the files of `{rev}` into `{}`", dest.display()))
}

/// Whether the tree of `rev` (in the repository holding `dir`) has a file at `path`
/// (relative to the top-level); false when there is no repository or no such revision.
pub fn has_file_at(dir: &Path, rev: &str, path: &str) -> bool {
    let Ok(repo) = open(dir) else {
        return false;
    };
    commit(&repo, rev)
        .and_then(|c| Ok(c.tree()?))
        .is_ok_and(|tree| tree.get_path(Path::new(path)).is_ok())
}

/// The full sha of the commit a revspec names.
pub fn resolve(dir: &Path, rev: &str) -> anyhow::Result<String> {
    let repo = open(dir)?;
    Ok(commit(&repo, rev)?.id().to_string())
}

/// What a plan was made from: the checked-out commit, plus a digest of
/// uncommitted changes to tracked files when there are any
/// (`<sha>+<digest>`). Untracked files are left out, so the files terraform
/// writes while planning (`.terraform/`, lock files, local state) do not make
/// a plan stale; an edit to a tracked file after planning does.
pub fn worktree_identity(dir: &Path) -> anyhow::Result<String> {
    use sha2::{Digest, Sha256};
    let repo = open(dir)?;
    let head = match repo.head().ok().and_then(|h| h.peel_to_commit().ok()) {
        Some(commit) => commit.id().to_string(),
        None => "0".repeat(40),
    };
    let mut options = git2::StatusOptions::new();
    options
        .include_untracked(false)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut options))?;
    let workdir = repo.workdir().map(Path::to_path_buf).unwrap_or_default();
    let mut changed: Vec<(String, u32)> = statuses
        .iter()
        .filter_map(|e| e.path().ok().map(|p| (p.to_string(), e.status().bits())))
        .collect();
    if changed.is_empty() {
        return Ok(head);
    }
    changed.sort();
    let mut digest = Sha256::new();
    for (path, bits) in &changed {
        digest.update(format!("{path}\0{bits}\0"));
        if let Ok(bytes) = std::fs::read(workdir.join(path)) {
            digest.update(Sha256::digest(&bytes));
        }
    }
    Ok(format!("{head}+{}", &hex::encode(digest.finalize())[..12]))
}

fn open(dir: &Path) -> anyhow::Result<Repository> {
    Repository::discover(dir).map_err(|e| {
        anyhow!(
            "no git repository at or above `{}` ({}): run cascade inside a clone, or point it at one",
            dir.display(),
            e.message()
        )
    })
}

fn commit<'r>(repo: &'r Repository, rev: &str) -> anyhow::Result<Commit<'r>> {
    let object = match repo.revparse_single(rev) {
        Ok(o) => o,
        Err(e)
            if matches!(
                e.code(),
                ErrorCode::NotFound | ErrorCode::InvalidSpec | ErrorCode::Ambiguous
            ) =>
        {
            let what = if e.code() == ErrorCode::Ambiguous {
                "ambiguous"
            } else {
                "unknown"
            };
            bail!("{what} revision `{rev}`: check the branch name or fetch it")
        }
        Err(e) => return Err(e).with_context(|| format!("resolving revision `{rev}`")),
    };
    object.peel_to_commit().map_err(|_| {
        anyhow!(
            "revision `{rev}` names a {}, not a commit: give a branch, tag or commit sha",
            object.kind().map_or("object", |k| k.str())
        )
    })
}

fn path_string(bytes: &[u8]) -> String {
    // Git paths are bytes, always '/'-separated; a non-UTF-8 name cannot be a
    // unit path or a read-set entry anyway, so a lossy name only has to print.
    String::from_utf8_lossy(bytes).into_owned()
}
