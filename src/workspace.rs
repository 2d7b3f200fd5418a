//! The bot's local copies of repositories.
//!
//! Owns: one bare mirror per repository (`<root>/mirrors/<owner>/<name>.git`),
//! fetched with the `git` CLI because git2 is built without https here; one
//! disposable checkout per pull request (`<root>/checkouts/<owner>/<name>/pr-<n>`,
//! a detached `git worktree` of the mirror); and scratch trees of other
//! revisions (`<root>/trees/<owner>/<name>/<sha>`) for discovery at the base.
//! Diffs, config reads and trees go through `cascade::git` (git2) on the mirror.
//!
//! Must never: run anything from a repository (no hooks, no filter drivers,
//! no submodules, only the file and http(s) transports, and no user or system
//! git configuration: git runs with an empty configuration of our own and
//! `HOME` under the root), write outside its root (repository names are
//! validated before they become paths), put an installation token in a URL,
//! a process argument, a log line or an error message (it travels as an HTTP
//! header set through git's environment, and git's messages are redacted), or
//! send it to any origin but its credential's (`forge::GitCredential`; clone
//! URLs are `forge::CloneUrl`s, which only the forge's API answers make).
//!
//! Decisions:
//! - Repository names are lowercased (GitHub's are case-insensitive), so one
//!   repository has one mirror whatever the payload's spelling.
//! - Fetched refs keep their names (`refs/pull/7/head`, `refs/heads/main`); a
//!   bare sha is kept as `refs/cascade/commits/<sha>` so gc cannot drop it.
//!   These refs are never deleted: a mirror only grows, like any clone.
//! - A new push resets the existing checkout (`checkout --force` + `clean
//!   -ffdx`) instead of making a new one, keeping only [`KEEP_ON_RESET`]
//!   (terraform's provider cache and local state, whether or not the repo
//!   ignores them) so `init` stays cheap and example repos keep their state.
//!   Anything else in a checkout is disposable.
//! - Fetches, checkouts and forgets of one repository take its async lock;
//!   reads (`changes`, `config_at`, `tree`) take none: git updates refs
//!   atomically after writing objects, and `tree` renames a finished directory
//!   into place.

use anyhow::{Context, anyhow, bail};
use base64::Engine as _;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// The repo configuration file, read from the base commit.
use crate::config::FILE_NAME as CONFIG_FILE;
use crate::forge::{CloneUrl, GitCredential};
use crate::git_process::{Git, GitFailure, Isolation};
use repo_name::RepoName;

/// A `.cascade.yaml` larger than this is refused rather than parsed.
const MAX_CONFIG_BYTES: usize = 1 << 20;

/// Untracked paths a new push leaves in a checkout: terraform's provider
/// cache and local state (example repos with a local backend keep their
/// state across pushes) and the bot's own scratch directory.
pub const KEEP_ON_RESET: &[&str] = &[".terraform", "*.tfstate", "*.tfstate.backup", ".cascade"];

const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(600);
const DEFAULT_LOCAL_TIMEOUT: Duration = Duration::from_secs(300);

/// The local copies of every repository the bot works on, under one root
/// (`<data-dir>/workspaces`). Cheap to clone: clones share the per-repository
/// locks.
#[derive(Clone, Debug)]
pub struct Workspaces {
    root: PathBuf,
    fetch_timeout: Duration,
    local_timeout: Duration,
    locks: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl Workspaces {
    /// The workspaces under `root` (normally `<data-dir>/workspaces`). A
    /// relative root is made absolute now, because worktrees record absolute
    /// paths. Nothing is created until it is needed.
    pub fn new(root: PathBuf) -> Workspaces {
        let root = std::path::absolute(&root).unwrap_or(root);
        Workspaces {
            root,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            local_timeout: DEFAULT_LOCAL_TIMEOUT,
            locks: Arc::default(),
        }
    }

    /// Overrides the time limits: `fetch` for network fetches (default 10
    /// minutes), `local` for worktree and clean operations (default 5 minutes).
    pub fn with_timeouts(mut self, fetch: Duration, local: Duration) -> Workspaces {
        self.fetch_timeout = fetch;
        self.local_timeout = local;
        self
    }

    /// The root every file of the workspaces lives under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the bare mirror of `repo` is (whether or not it was fetched yet).
    pub fn mirror_path(&self, repo: &str) -> anyhow::Result<PathBuf> {
        Ok(self.mirror_dir(&RepoName::parse(repo)?))
    }

    /// Fetches `refspecs` from `from` into the bare mirror of `repo`
    /// (`owner/name`) and returns the mirror's path.
    ///
    /// A refspec is a ref (`refs/pull/7/head`, stored under the same name), a
    /// branch name (`main`, stored as `refs/heads/main`), a commit sha (stored
    /// as `refs/cascade/commits/<sha>` so it stays reachable), or an explicit
    /// `src:dst` with `dst` under `refs/`. Every update is forced: branches are
    /// force-pushed.
    ///
    /// The credential's token is sent as `Authorization: Basic
    /// base64("x-access-token:" + token)` through `http.extraHeader` set in git's
    /// environment (`GIT_CONFIG_COUNT`), so it is neither in the URL nor in the process
    /// arguments other users can read, and only to the credential's own origin: a URL
    /// at any other origin is refused before git starts, and git follows no redirect
    /// (`http.followRedirects false`), so the header cannot be carried elsewhere either.
    /// For a local directory it is not used. Fetches of one repository are serialised;
    /// different repositories fetch in parallel.
    pub async fn fetch(
        &self,
        repo: &str,
        from: &CloneUrl,
        credential: Option<&GitCredential>,
        refspecs: &[String],
    ) -> anyhow::Result<PathBuf> {
        let name = RepoName::parse(repo)?;
        let repo = name.key();
        let shown_url = from.to_string();
        let credential = match (from.origin(), credential) {
            (Some(origin), Some(credential)) if origin != *credential.origin() => bail!(
                "cannot fetch {repo} from {shown_url}: that is not {}, where its credential \
                 belongs, and cascade sends a forge's token nowhere else",
                credential.origin()
            ),
            (Some(_), credential) => credential.filter(|c| !c.token().is_empty()),
            (None, _) => None,
        };
        if refspecs.is_empty() {
            bail!("cannot fetch {repo}: no refs were asked for; name the head and base refs");
        }
        let specs = refspecs
            .iter()
            .map(|s| normalize_refspec(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("cannot fetch {repo}: {e}"))?;

        let lock = self.lock(&name);
        let _guard = lock.lock().await;
        let mirror = self.ensure_mirror(&name).await?;

        let mut git = self
            .git(self.fetch_timeout)
            .git_dir(&mirror)
            .args([
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-recurse-submodules",
                "--update-head-ok",
                "--",
                from.as_str(),
            ])
            .args(&specs);
        // A redirect would carry the header to wherever it points.
        git = git.config("http.followRedirects", "false");
        if let Some(credential) = credential {
            let token = credential.token();
            let basic =
                base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
            git = git
                .config("http.extraHeader", &format!("Authorization: Basic {basic}"))
                .secret(token)
                .secret(&basic);
        }
        tracing::debug!(repo = %repo, url = %shown_url, refspecs = ?specs, "fetching");
        match self.run(git).await {
            Ok(_) => {
                tracing::info!(repo = %repo, refspecs = ?specs, "fetched");
                Ok(mirror)
            }
            Err(failure @ GitFailure::TimedOut(_)) => Err(anyhow!(
                "{}; check the network path to {shown_url}, then retry",
                failure.describe(&format!("cannot fetch {repo}"))
            )),
            Err(failure) => Err(anyhow!(
                "{}; check {}, that the URL is right and that the refs exist",
                failure.describe(&format!("cannot fetch {repo} from {shown_url}")),
                if repo.starts_with(crate::forge::types::GITLAB_REPO_PREFIX) {
                    "that cascade's GitLab token may read the project (a member of it, with \
                     the `api` or `read_repository` scope)"
                } else {
                    "the installation has access to it"
                }
            )),
        }
    }

    /// A checkout of `sha` for pull request `number`, at
    /// `<root>/checkouts/<owner>/<name>/pr-<number>`, a detached worktree of the
    /// mirror (fetch the commit first).
    ///
    /// An existing checkout is reused: `git checkout --force` to `sha`, then
    /// `git clean -ffdx` keeping only [`KEEP_ON_RESET`] (terraform's provider
    /// cache and local state, ignored or not), so edits and other untracked
    /// files from an earlier run are gone. A checkout that cannot be reset is
    /// deleted and made again: checkouts are disposable.
    pub async fn checkout(&self, repo: &str, number: u64, sha: &str) -> anyhow::Result<PathBuf> {
        let name = RepoName::parse(repo)?;
        let repo = name.key();
        let mirror = self.existing_mirror(&name)?;
        let full = crate::git::resolve(&mirror, sha)
            .map_err(|e| anyhow!("cannot check out {sha} of {repo}: {e:#}"))?;

        let lock = self.lock(&name);
        let _guard = lock.lock().await;
        let dir = self.checkout_dir(&name, number);
        if dir.join(".git").is_file() {
            match self.reset(&dir, &full).await {
                Ok(()) => {
                    tracing::info!(repo = %repo, pr = number, sha = %full, "checkout reset");
                    return Ok(dir);
                }
                Err(e) => {
                    tracing::warn!(repo = %repo, pr = number, error = %e,
                        "checkout cannot be reset; making it again");
                }
            }
        }
        if dir.exists() {
            remove_dir(&dir)
                .await
                .with_context(|| format!("cannot check out {sha} of {repo}"))?;
        }
        let parent = dir.parent().expect("checkout dirs have a parent");
        tokio::fs::create_dir_all(parent)
            .await
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
        let doing = format!("cannot check out {sha} of {repo} for pull request #{number}");
        // A checkout deleted behind our back leaves its registration in the
        // mirror, and `worktree add` refuses the path until it is pruned.
        let prune = self
            .git(self.local_timeout)
            .git_dir(&mirror)
            .args(["worktree", "prune"]);
        self.run(prune)
            .await
            .map_err(|f| anyhow!(f.describe(&doing)))?;
        let add = self
            .git(self.local_timeout)
            .git_dir(&mirror)
            .args(["worktree", "add", "--quiet", "--detach", "--"])
            .arg(&dir)
            .arg(&full);
        self.run(add)
            .await
            .map_err(|f| anyhow!(f.describe(&doing)))?;
        tracing::info!(repo = %repo, pr = number, sha = %full, "checkout created");
        Ok(dir)
    }

    /// Removes the checkout of a closed pull request (nothing to do if there is
    /// none). The mirror and its refs stay.
    pub async fn forget(&self, repo: &str, number: u64) -> anyhow::Result<()> {
        let name = RepoName::parse(repo)?;
        let repo = name.key();
        let lock = self.lock(&name);
        let _guard = lock.lock().await;
        let dir = self.checkout_dir(&name, number);
        if dir.exists() {
            remove_dir(&dir)
                .await
                .with_context(|| format!("cannot forget pull request #{number} of {repo}"))?;
        }
        let mirror = self.mirror_dir(&name);
        if mirror.join("HEAD").is_file() {
            let prune = self
                .git(self.local_timeout)
                .git_dir(&mirror)
                .args(["worktree", "prune"]);
            self.run(prune).await.map_err(|f| {
                anyhow!(f.describe(&format!("cannot forget pull request #{number} of {repo}")))
            })?;
        }
        tracing::info!(repo = %repo, pr = number, "checkout forgotten");
        Ok(())
    }

    /// The merge-base diff of `head_sha` against `base_sha` (any revspec the
    /// mirror resolves), through [`crate::git::changed_files`] on the mirror.
    pub fn changes(
        &self,
        repo: &str,
        base_sha: &str,
        head_sha: &str,
    ) -> anyhow::Result<crate::git::ChangeSet> {
        let name = RepoName::parse(repo)?;
        let mirror = self.existing_mirror(&name)?;
        crate::git::changed_files(&mirror, base_sha, head_sha).map_err(|e| {
            anyhow!(
                "cannot compare {head_sha} with {base_sha} in {}: {e:#}",
                name.key()
            )
        })
    }

    /// The text of `.cascade.yaml` ([`crate::config::FILE_NAME`]) at commit `sha` (the base: a pull request
    /// cannot change its own configuration), or `None` if it has none.
    pub fn config_at(&self, repo: &str, sha: &str) -> anyhow::Result<Option<String>> {
        let name = RepoName::parse(repo)?;
        let repo = name.key();
        let mirror = self.existing_mirror(&name)?;
        let doing = format!("cannot read {CONFIG_FILE} of {repo} at {sha}");
        let full = crate::git::resolve(&mirror, sha).map_err(|e| anyhow!("{doing}: {e:#}"))?;
        let git = git2::Repository::open_bare(&mirror)
            .map_err(|e| anyhow!("{doing}: cannot open the mirror ({})", e.message()))?;
        let read = || -> Result<Option<String>, git2::Error> {
            let tree = git.find_commit(git2::Oid::from_str(&full)?)?.tree()?;
            let entry = match tree.get_path(Path::new(CONFIG_FILE)) {
                Ok(entry) => entry,
                Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            if entry.kind() != Some(git2::ObjectType::Blob) || entry.filemode() == 0o120000 {
                return Err(git2::Error::from_str(
                    "it is not a regular file; make it a plain file at the repository root",
                ));
            }
            let blob = git.find_blob(entry.id())?;
            if blob.size() > MAX_CONFIG_BYTES {
                return Err(git2::Error::from_str(&format!(
                    "it is {} bytes, over the {MAX_CONFIG_BYTES}-byte limit; make it smaller",
                    blob.size()
                )));
            }
            match std::str::from_utf8(blob.content()) {
                Ok(text) => Ok(Some(text.to_string())),
                Err(_) => Err(git2::Error::from_str(
                    "it is not UTF-8 text; save it as UTF-8",
                )),
            }
        };
        read().map_err(|e| anyhow!("{doing}: {}", e.message()))
    }

    /// The files of commit `sha`, written once to `<root>/trees/<owner>/<name>/<full sha>`
    /// and reused afterwards (for discovery at the base revision). The
    /// directory appears atomically: it is written beside and renamed.
    pub fn tree(&self, repo: &str, sha: &str) -> anyhow::Result<PathBuf> {
        self.written(repo, sha, None)
    }

    /// Only the files under `dirs` (repo-relative directories) of commit `sha`, written
    /// once to `<root>/policy-trees/<owner>/<name>/<full sha>-<digest of dirs>` as
    /// [`Self::tree`] writes all of them: the default branch's policy directories, read
    /// without a copy of the whole repository.
    pub fn subtree(&self, repo: &str, sha: &str, dirs: &[&str]) -> anyhow::Result<PathBuf> {
        self.written(repo, sha, Some(dirs))
    }

    fn written(&self, repo: &str, sha: &str, only: Option<&[&str]>) -> anyhow::Result<PathBuf> {
        let name = RepoName::parse(repo)?;
        let repo = name.key();
        let mirror = self.existing_mirror(&name)?;
        let doing = format!("cannot write the files of {sha} of {repo}");
        let full = crate::git::resolve(&mirror, sha).map_err(|e| anyhow!("{doing}: {e:#}"))?;
        let dest = match only {
            None => name.dir_in(&self.root, "trees").join(&full),
            Some(dirs) => {
                use sha2::Digest as _;
                let digest = sha2::Sha256::digest(dirs.join("\n").as_bytes());
                let digest = hex::encode(&digest[..8]);
                name.dir_in(&self.root, "policy-trees")
                    .join(format!("{full}-{digest}"))
            }
        };
        if dest.is_dir() {
            return Ok(dest);
        }
        let parent = dest.parent().expect("tree dirs have a parent");
        std::fs::create_dir_all(parent)
            .with_context(|| format!("{doing}: cannot create `{}`", parent.display()))?;
        let scratch = tempfile::Builder::new()
            .prefix(".partial-")
            .tempdir_in(parent)
            .with_context(|| {
                format!(
                    "{doing}: cannot create a directory in `{}`",
                    parent.display()
                )
            })?;
        match only {
            None => crate::git::materialize(&mirror, &full, scratch.path()),
            Some(dirs) => crate::git::materialize_paths(&mirror, &full, scratch.path(), dirs),
        }
        .map_err(|e| anyhow!("{doing}: {e:#}"))?;
        match std::fs::rename(scratch.path(), &dest) {
            Ok(()) => {
                let _ = scratch.keep();
            }
            // Another caller finished the same tree first: use theirs.
            Err(_) if dest.is_dir() => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("{doing}: cannot move it to `{}`", dest.display()));
            }
        }
        Ok(dest)
    }

    fn mirror_dir(&self, name: &RepoName) -> PathBuf {
        let mut dir = name.dir_in(&self.root, "mirrors");
        // GitHub's `owner/name` is kept in `owner/name.git` (as before GitLab came); GitLab's
        // project directory already ends in `.git`.
        if !name
            .key
            .starts_with(crate::forge::types::GITLAB_REPO_PREFIX)
        {
            dir.set_file_name(format!("{}.git", name.dirs[1]));
        }
        dir
    }

    fn checkout_dir(&self, name: &RepoName, number: u64) -> PathBuf {
        name.dir_in(&self.root, "checkouts")
            .join(format!("pr-{number}"))
    }

    /// The mirror, or an error saying to fetch first.
    fn existing_mirror(&self, name: &RepoName) -> anyhow::Result<PathBuf> {
        let mirror = self.mirror_dir(name);
        if !mirror.join("HEAD").is_file() {
            bail!(
                "{} has not been fetched into `{}` yet; fetch it first",
                name.key(),
                self.root.display()
            );
        }
        Ok(mirror)
    }

    /// Creates the bare mirror if it is missing: initialised beside and
    /// renamed, so a crash never leaves a half-made mirror in place.
    async fn ensure_mirror(&self, name: &RepoName) -> anyhow::Result<PathBuf> {
        let mirror = self.mirror_dir(name);
        if mirror.join("HEAD").is_file() {
            return Ok(mirror);
        }
        let doing = format!("cannot create the mirror of {}", name.key());
        let parent = mirror.parent().expect("mirror dirs have a parent");
        tokio::fs::create_dir_all(parent)
            .await
            .with_context(|| format!("{doing}: cannot create `{}`", parent.display()))?;
        let scratch = tempfile::Builder::new()
            .prefix(".partial-")
            .tempdir_in(parent)
            .with_context(|| format!("{doing} in `{}`", parent.display()))?;
        let init = self
            .git(self.local_timeout)
            .args(["init", "--quiet", "--bare", "--"])
            .arg(scratch.path());
        self.run(init)
            .await
            .map_err(|f| anyhow!(f.describe(&doing)))?;
        if mirror.exists() {
            // A leftover that is not a repository (no HEAD).
            remove_dir(&mirror).await.context(doing.clone())?;
        }
        std::fs::rename(scratch.path(), &mirror)
            .with_context(|| format!("{doing}: cannot move it to `{}`", mirror.display()))?;
        let _ = scratch.keep();
        tracing::info!(repo = %name.key(), mirror = %mirror.display(), "mirror created");
        Ok(mirror)
    }

    /// Moves an existing checkout to `sha` and removes what an earlier run left.
    async fn reset(&self, dir: &Path, sha: &str) -> anyhow::Result<()> {
        let git_dir = dir.join(".git");
        let mut work_tree = OsString::from("--work-tree=");
        work_tree.push(dir);
        let checkout = self
            .git(self.local_timeout)
            .git_dir(&git_dir)
            .arg(&work_tree)
            .args(["checkout", "--quiet", "--force", "--detach", sha, "--"]);
        self.run(checkout)
            .await
            .map_err(|f| anyhow!(f.describe("git checkout")))?;
        let mut clean = self
            .git(self.local_timeout)
            .git_dir(&git_dir)
            .arg(&work_tree)
            .args(["clean", "-ffdxq"]);
        for keep in KEEP_ON_RESET {
            clean = clean.args(["-e", keep]);
        }
        // `git clean` works on the current directory: run it at the top.
        let clean = clean.cwd(dir);
        self.run(clean)
            .await
            .map_err(|f| anyhow!(f.describe("git clean")))?;
        Ok(())
    }

    fn lock(&self, name: &RepoName) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(name.key()).or_default().clone()
    }

    fn git(&self, timeout: Duration) -> Git {
        Git::new(timeout)
    }

    async fn run(&self, git: Git) -> Result<String, GitFailure> {
        Isolation::new(&self.root).run(git).await
    }
}

/// Turns a ref, branch name or sha into a forced `src:dst` refspec that keeps
/// what was fetched under a local ref.
fn normalize_refspec(spec: &str) -> Result<String, String> {
    let bad = |why: &str| {
        Err(format!(
            "refspec {spec:?} {why}; pass a ref, branch or commit sha"
        ))
    };
    let body = spec.strip_prefix('+').unwrap_or(spec);
    if body.is_empty() {
        return bad("is empty");
    }
    if body.starts_with('-') || body.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return bad("has a leading `-`, a space or a control character");
    }
    if let Some((src, dst)) = body.split_once(':') {
        if src.is_empty() || dst.contains(':') || !dst.starts_with("refs/") {
            return bad("must be `src:dst` with `dst` under `refs/`");
        }
        return Ok(format!("+{src}:{dst}"));
    }
    let is_sha = matches!(body.len(), 40 | 64) && body.chars().all(|c| c.is_ascii_hexdigit());
    Ok(if is_sha {
        format!("+{body}:refs/cascade/commits/{}", body.to_ascii_lowercase())
    } else if body.starts_with("refs/") {
        format!("+{body}:{body}")
    } else {
        format!("+refs/heads/{body}:refs/heads/{body}")
    })
}

async fn remove_dir(dir: &Path) -> anyhow::Result<()> {
    // std's remove_dir_all does not follow symlinks, so a link a pull request
    // committed cannot make it delete outside the checkout.
    match tokio::fs::remove_dir_all(dir).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot remove `{}`", dir.display())),
    }
}

mod repo_name;
#[cfg(test)]
mod tests;
