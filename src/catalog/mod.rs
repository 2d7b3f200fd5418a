//! The remote sources stacks name (a unit catalog on GitHub, a mirror of one), fetched
//! once per (repository, commit) into a read-only cache under the data directory.
//!
//! Owns: who may be fetched from ([`Access`]: on the server, the served forge with its
//! own credential and the operator's `--source-host` list; on a laptop, whatever the
//! user's git reaches), resolving a ref to a commit, the fetch (bounded in time and size:
//! `terragrunt::limits`), and the cache: `<root>/trees/<repository>/<commit>`, written
//! whole into a scratch directory, made read-only, then renamed into place, so a reader
//! never sees half a tree and a commit once cached is never fetched again.
//! Never: runs anything from a fetched tree (git runs with hooks off, no submodules, no
//! LFS, no filters), sends the forge's token to another origin, lets a pull request's URL
//! reach a host nobody listed, or shows a credential in an error.

mod hosts;
mod sourced;
mod tree;

pub use hosts::SourceHosts;

use crate::forge::GitCredential;
use crate::git_process::{Git, GitFailure, Isolation};
use crate::terragrunt::limits::{
    MAX_SOURCE_FETCH_BYTES, MAX_SOURCE_FILES, MAX_SOURCE_TREE_BYTES, SOURCE_FETCH_SECONDS,
};
use crate::terragrunt::remote_source::GitSource;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use url::Url;

/// Who may be fetched from, and how.
#[derive(Clone, Debug)]
pub enum Access {
    /// `cascade serve`: git isolated from the server's environment.
    Server {
        /// The operator's allow-list.
        hosts: SourceHosts,
        /// The served forge's origin and token: sources there are fetched with it (an
        /// ssh address there is fetched over https), and only what it can read.
        forge: Option<GitCredential>,
        /// `--git-config`: the operator's `insteadOf` rewrites and credentials.
        git_config: Option<PathBuf>,
    },
    /// The CLI: the user's own git, configuration and credentials included.
    User,
}

/// What the server's operator says about remote sources: the hosts besides the served
/// forge (`--source-host`) and a git configuration of their own (`--git-config`).
#[derive(Clone, Debug, Default)]
pub struct ServerSources {
    pub hosts: SourceHosts,
    pub git_config: Option<PathBuf>,
}

impl ServerSources {
    /// The server's access for one repository's job: its forge's credential, if any.
    pub fn access(&self, forge: Option<GitCredential>) -> Access {
        Access::Server {
            hosts: self.hosts.clone(),
            forge,
            git_config: self.git_config.clone(),
        }
    }
}

/// A fetched source: the whole repository's tree at `commit`, read-only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedTree {
    /// The tree's root (the source's `//subdir` is below it).
    pub dir: PathBuf,
    /// The commit the ref resolved to.
    pub commit: String,
}

/// Why a source was not fetched; its `Display` is the reason a problem shows, never
/// with a credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchError {
    /// The host is neither the served forge nor on `--source-host`.
    NotAllowed { host: String },
    /// A `file://` source on the server.
    LocalOnServer,
    /// git could not reach the repository, or it does not exist for cascade.
    Unreachable(String),
    /// The ref names nothing in the repository.
    RefNotFound(String),
    /// A limit of `terragrunt::limits`.
    TooLarge(String),
    /// Past [`SOURCE_FETCH_SECONDS`].
    TimedOut,
    /// The cache could not be written.
    Cache(String),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::NotAllowed { host } => write!(
                f,
                "`{}` is not on the allow-list: the server fetches sources only from the forge it serves and the hosts its operator lists with --source-host",
                crate::inert::visible_line(host)
            ),
            FetchError::LocalOnServer => f.write_str(
                "a file:// source names a path on the server; the server fetches sources only over https or ssh",
            ),
            FetchError::Unreachable(why) => write!(f, "could not reach the repository ({why})"),
            FetchError::RefNotFound(reference) => write!(
                f,
                "ref not found: the repository has no tag, branch or commit `{}`",
                crate::inert::visible_line(reference)
            ),
            FetchError::TooLarge(what) => f.write_str(what),
            FetchError::TimedOut => write!(
                f,
                "the fetch exceeds cascade's limit of {SOURCE_FETCH_SECONDS} s"
            ),
            FetchError::Cache(why) => write!(f, "the fetched tree could not be cached ({why})"),
        }
    }
}

/// The bounds on one source: `terragrunt::limits`' numbers, smaller in tests.
#[derive(Clone, Copy, Debug)]
pub struct SourceLimits {
    /// What one fetch may download ([`MAX_SOURCE_FETCH_BYTES`]).
    pub fetch_bytes: u64,
    /// Entries of the tree ([`MAX_SOURCE_FILES`]).
    pub files: usize,
    /// Bytes of the tree's files ([`MAX_SOURCE_TREE_BYTES`]).
    pub tree_bytes: u64,
}

impl Default for SourceLimits {
    fn default() -> SourceLimits {
        SourceLimits {
            fetch_bytes: MAX_SOURCE_FETCH_BYTES,
            files: MAX_SOURCE_FILES,
            tree_bytes: MAX_SOURCE_TREE_BYTES,
        }
    }
}

/// The cache and the rules of one process.
pub struct Catalog {
    root: PathBuf,
    access: Access,
    timeout: Duration,
    limits: SourceLimits,
    /// Fetches that went to the network (a cached commit does not count).
    fetches: AtomicUsize,
}

impl Catalog {
    /// A cache under `root` (normally `<data-dir>/sources`).
    pub fn new(root: PathBuf, access: Access) -> Catalog {
        Catalog {
            root,
            access,
            timeout: Duration::from_secs(SOURCE_FETCH_SECONDS),
            limits: SourceLimits::default(),
            fetches: AtomicUsize::new(0),
        }
    }

    /// Other bounds than `terragrunt::limits`' (tests reach them with small trees).
    pub fn with_limits(mut self, limits: SourceLimits) -> Catalog {
        self.limits = limits;
        self
    }

    /// How many fetches went to the network since this catalog was made.
    pub fn fetch_count(&self) -> usize {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The tree of `source` at the commit its ref names now: from the cache when that
    /// commit is there (a sha ref never asks the remote), else fetched.
    pub async fn fetch(&self, source: &GitSource) -> Result<FetchedTree, FetchError> {
        let remote = self.remote(source)?;
        let commit = match source.reference() {
            Some(sha) if is_full_sha(sha) => sha.to_ascii_lowercase(),
            reference => self.resolve(&remote, reference).await?,
        };
        let dest = self
            .root
            .join("trees")
            .join(repository_dir(source))
            .join(&commit);
        if dest.is_dir() {
            return Ok(FetchedTree { dir: dest, commit });
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        self.fetch_into(&remote, source, &commit, &dest).await?;
        Ok(FetchedTree { dir: dest, commit })
    }

    /// Where git fetches from, and with what, once access allows it.
    fn remote(&self, source: &GitSource) -> Result<Remote, FetchError> {
        let url = source.url().clone();
        let Access::Server { hosts, forge, .. } = &self.access else {
            return Ok(Remote { url, token: None });
        };
        if url.scheme() == "file" {
            return Err(FetchError::LocalOnServer);
        }
        if let Some(forge) = forge {
            let origin = forge.origin().serialized();
            let at_forge = match url.scheme() {
                // `git@github.com:acme/catalog.git` on the forge cascade serves: over
                // https, with the forge's credential (the server holds no ssh key).
                "ssh" if url.port().is_none_or(|p| p == 22) => Url::parse(&origin)
                    .ok()
                    .filter(|o| o.host_str() == url.host_str())
                    .and_then(|o| o.join(url.path()).ok()),
                _ => forge.origin().holds(url.as_str()).then(|| url.clone()),
            };
            if let Some(mut at_forge) = at_forge {
                let _ = at_forge.set_username("");
                let _ = at_forge.set_password(None);
                return Ok(Remote {
                    url: at_forge,
                    token: Some((origin, forge.token().to_string())),
                });
            }
        }
        if hosts.allows(&url) {
            return Ok(Remote { url, token: None });
        }
        Err(FetchError::NotAllowed {
            host: source.host().unwrap_or_default().to_string(),
        })
    }

    fn isolation(&self) -> Isolation {
        match &self.access {
            Access::Server { git_config, .. } => {
                Isolation::new(&self.root).with_global_config(git_config.clone())
            }
            Access::User => Isolation::users_own(&self.root),
        }
    }

    /// git with what every call needs: the transports, no redirects, the credential for
    /// its own origin only.
    fn git(&self, remote: &Remote) -> Git {
        let mut git = Git::new(self.timeout)
            .max_file_bytes(self.limits.fetch_bytes)
            .config("http.followRedirects", "false")
            // Keep every fetch as one pack file, so the file-size cap bounds it whole
            // (below the unpack limit git writes each object as a file of its own).
            .config("fetch.unpackLimit", "1")
            .config("transfer.unpackLimit", "1")
            .config("fetch.recurseSubmodules", "false")
            .config("filter.lfs.process", "")
            .config("filter.lfs.smudge", "")
            .config("filter.lfs.required", "false");
        if matches!(self.access, Access::Server { .. }) {
            git = git
                .config("protocol.file.allow", "never")
                .config("protocol.ssh.allow", "always");
        }
        if let Some((origin, token)) = &remote.token {
            let basic =
                base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
            // Scoped to the forge's origin: git sends it nowhere else, whatever a
            // rewrite of the operator's does to the URL.
            git = git
                .config(
                    &format!("http.{origin}/.extraHeader"),
                    &format!("Authorization: Basic {basic}"),
                )
                .secret(token)
                .secret(&basic);
        }
        git
    }

    /// The commit `reference` names at the remote (the default branch when `None`).
    async fn resolve(
        &self,
        remote: &Remote,
        reference: Option<&str>,
    ) -> Result<String, FetchError> {
        let patterns: Vec<String> = match reference {
            Some(r) => vec![
                format!("refs/tags/{r}"),
                format!("refs/tags/{r}^{{}}"),
                format!("refs/heads/{r}"),
            ],
            None => vec!["HEAD".to_string()],
        };
        let git = self
            .git(remote)
            .args(["ls-remote", "--"])
            .arg(remote.url.as_str())
            .args(&patterns);
        let listed = self
            .isolation()
            .run(git)
            .await
            .map_err(|f| failure(f, &self.limits))?;
        let found = |name: &str| {
            listed.lines().find_map(|line| {
                let (sha, refname) = line.split_once('\t')?;
                (refname == name && is_full_sha(sha)).then(|| sha.to_ascii_lowercase())
            })
        };
        // A peeled annotated tag (its commit) first, then the tag, then a branch.
        match reference {
            Some(r) => found(&format!("refs/tags/{r}^{{}}"))
                .or_else(|| found(&format!("refs/tags/{r}")))
                .or_else(|| found(&format!("refs/heads/{r}"))),
            None => found("HEAD"),
        }
        .ok_or_else(|| FetchError::RefNotFound(reference.unwrap_or("HEAD").to_string()))
    }

    /// Fetches `commit` into a scratch repository, writes its tree read-only and renames
    /// it to `dest`.
    async fn fetch_into(
        &self,
        remote: &Remote,
        source: &GitSource,
        commit: &str,
        dest: &Path,
    ) -> Result<(), FetchError> {
        let parent = dest.parent().expect("a tree has a parent");
        std::fs::create_dir_all(parent).map_err(|e| FetchError::Cache(e.to_string()))?;
        let scratch = tempfile::Builder::new()
            .prefix(".partial-")
            .tempdir_in(parent)
            .map_err(|e| FetchError::Cache(e.to_string()))?;
        let git_dir = scratch.path().join("repo.git");
        let init = Git::new(self.timeout)
            .args(["init", "--quiet", "--bare"])
            .arg(&git_dir);
        self.isolation()
            .run(init)
            .await
            .map_err(|f| failure(f, &self.limits))?;
        let wanted = match source.reference() {
            Some(r) if !is_full_sha(r) => r.to_string(),
            _ => commit.to_string(),
        };
        let depth = source.depth().unwrap_or(1).to_string();
        let fetch = self
            .git(remote)
            .git_dir(&git_dir)
            .args([
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-recurse-submodules",
                "--no-write-fetch-head",
            ])
            .arg(format!("--depth={depth}"))
            .arg("--")
            .arg(remote.url.as_str())
            .arg(format!("{wanted}:refs/cascade/source"));
        match self.isolation().run(fetch).await {
            Ok(_) => {}
            Err(GitFailure::Exit(message))
                if message.contains("couldn't find remote ref")
                    || message.contains("not our ref") =>
            {
                return Err(FetchError::RefNotFound(wanted));
            }
            // git reports the cap in several words ("invalid index-pack output", a
            // signal): a file that reached it says so plainly.
            Err(_) if largest_file(&git_dir) >= self.limits.fetch_bytes => {
                return Err(too_large(&self.limits));
            }
            Err(other) => return Err(failure(other, &self.limits)),
        }
        let fetched = crate::git::resolve(&git_dir, "refs/cascade/source")
            .map_err(|e| FetchError::Cache(format!("{e:#}")))?;
        if fetched != commit {
            // The ref moved between resolving and fetching: the plan keeps the first answer.
            return Err(FetchError::Unreachable(format!(
                "`{wanted}` moved while it was fetched; plan again"
            )));
        }
        let tree_dir = scratch.path().join("tree");
        tree::write(&git_dir, commit, &tree_dir, &self.limits)?;
        match std::fs::rename(&tree_dir, dest) {
            Ok(()) => Ok(()),
            // Another plan cached the same commit first: theirs is the same tree.
            Err(_) if dest.is_dir() => {
                tree::discard(&tree_dir);
                Ok(())
            }
            Err(e) => Err(FetchError::Cache(e.to_string())),
        }
    }
}

/// Where git fetches from.
struct Remote {
    url: Url,
    /// The forge's origin and its token, for a source on the served forge.
    token: Option<(String, String)>,
}

/// What a git failure means for a source.
fn failure(failure: GitFailure, limits: &SourceLimits) -> FetchError {
    match failure {
        GitFailure::TimedOut(_) => FetchError::TimedOut,
        GitFailure::Exit(message) if message.contains("File too large") => too_large(limits),
        GitFailure::Exit(message) => FetchError::Unreachable(short(&message)),
        GitFailure::Spawn(e) => FetchError::Unreachable(format!("cannot run git: {e}")),
    }
}

fn too_large(limits: &SourceLimits) -> FetchError {
    FetchError::TooLarge(format!(
        "the repository exceeds cascade's limit of {} for one source's fetch",
        size(limits.fetch_bytes)
    ))
}

/// The size of the largest file under `dir` (0 when there is none).
fn largest_file(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok().map(|m| m.len()))
        .max()
        .unwrap_or(0)
}

/// git's message, one visible line of at most 300 characters.
fn short(message: &str) -> String {
    let line: String = message.chars().take(300).collect();
    crate::inert::visible_line(&line).into_owned()
}

/// `256 MiB`, or bytes below a MiB (tests' limits).
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

fn is_full_sha(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// One directory name per repository, whatever its spelling: a digest of its key.
fn repository_dir(source: &GitSource) -> String {
    let digest = Sha256::digest(source.repository_key().as_bytes());
    hex::encode(&digest[..16])
}

#[cfg(test)]
mod tests;
