//! The repository's files as discovery sees them, walled in at the repository
//! root.
//!
//! Owns: one walk of the discovery directory into a sorted index (existence
//! checks and "files under this directory" are lookups), the symbolic links it
//! met, every read discovery makes, and the *generated directories* of stacks:
//! a unit that `terragrunt stack generate` would write to
//! `live/.terragrunt-stack/vpc` is read from its source directory, so paths
//! under a generated directory are translated to the source here, at the one
//! place every read passes.
//!
//! *Mounts*: a remote source fetched for a stack is a tree outside the
//! repository. It is mounted at a name no repository path can have
//! (`../.cascade-sources/<n>`: every path the evaluator makes is cleaned, and
//! a cleaned path never starts with `..`), and only generated directories lead
//! there. The same wall stands at the tree's root: every path under a mount is
//! resolved (links included) and refused when it leaves the tree.
//!
//! The walk enters hidden directories, as Terragrunt 1.x does, and skips only
//! `.git`, `.terraform`, `.terragrunt-cache` (Terragrunt's
//! `SkipDirIfIgnorable`), `.terragrunt-stack` (what stacks generate there
//! is expanded from the stack files instead, so a stale copy on disk never
//! counts) and `.cascade` (cascade's own data: runs, base trees).
//!
//! Symbolic links: the walk never lets the operating system follow a link
//! blindly. A link that resolves inside the repository behaves as Terragrunt
//! has it: a linked directory is walked at the link's path, a linked file is
//! read through the link, and both targets join the read sets (git reports
//! changes at the target). A link that resolves outside the repository is
//! *refused*: never walked, never read, and reported at the link's path; so is
//! a link to one of its own ancestors (a loop). Reads resolve the real path and
//! refuse anything outside the canonical root, anything that is not a regular
//! file (a FIFO would hang), and anything larger than the caller's limit.
//!
//! Must never: read outside the repository root, follow a link it has not
//! resolved, open a special file, or put an absolute path or a file's
//! contents into an error.

use super::limits::{MAX_LINKED_DIRS, MAX_STACK_DEPTH, MAX_WALK_DEPTH, MAX_WALK_ENTRIES};
use super::paths;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

mod walk;
#[cfg(test)]
use walk::Walk;
use walk::walk_listing;

/// Directory names the walk never enters: Terragrunt's `SkipDirIfIgnorable`,
/// the directory stacks generate into (expanded from the stack files), and
/// cascade's own data directory (`cascade plan`'s default `<repo>/.cascade`
/// holds whole trees of other revisions, which are not this tree's units).
const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".terraform",
    ".terragrunt-cache",
    STACK_DIR,
    ".cascade",
];

/// Where `terragrunt stack generate` writes a stack's units.
pub const STACK_DIR: &str = ".terragrunt-stack";

/// The names of a unit's configuration, in the order Terragrunt looks for them
/// (`DefaultTerragruntConfigPaths`: the JSON form wins).
pub const UNIT_CONFIG_NAMES: [&str; 2] = ["terragrunt.hcl.json", "terragrunt.hcl"];

/// The name of a stack's configuration.
pub const STACK_CONFIG_NAME: &str = "terragrunt.stack.hcl";

/// Why the walk did not enter a directory or follow a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A link that resolves outside the repository root.
    Escapes,
    /// A link to a directory it is itself inside of.
    Loop,
    /// A link to a directory after the walk followed [`MAX_LINKED_DIRS`] of them.
    TooManyLinks,
    /// A directory [`MAX_WALK_DEPTH`] levels down.
    TooDeep,
    /// A directory or link whose name is not UTF-8.
    NotUtf8,
}

/// Why the walk stopped early, if it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truncation {
    /// More than [`MAX_WALK_ENTRIES`] files and directories.
    Entries,
    /// The discovery deadline passed.
    Deadline,
}

/// What a repo-relative path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    File,
    Dir,
    Missing,
    /// It leads outside the repository (through a symbolic link).
    Escapes,
    /// Something else: a FIFO, a socket, a device.
    Special,
}

/// Why a read was refused or failed; says nothing about the path or the contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    Missing,
    Escapes,
    NotAFile,
    TooLarge { limit: u64 },
    NotText,
    Failed(String),
}

impl ReadError {
    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            ReadError::Missing => "create it or fix the path",
            ReadError::Escapes => "use a file inside the repository",
            ReadError::NotAFile => "make it a regular file",
            ReadError::TooLarge { .. } => "make it smaller",
            ReadError::NotText => "save it as UTF-8",
            ReadError::Failed(_) => "make it readable",
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Missing => f.write_str("it does not exist"),
            ReadError::Escapes => f.write_str(
                "it is a symbolic link (or lies under one) that leads outside the repository, and cascade reads nothing outside the repository",
            ),
            ReadError::NotAFile => f.write_str("it is not a regular file"),
            ReadError::TooLarge { limit } => write!(
                f,
                "it is larger than cascade's limit of {} KiB for this kind of file",
                limit >> 10
            ),
            ReadError::NotText => f.write_str("it is not UTF-8 text"),
            ReadError::Failed(kind) => write!(f, "it cannot be read ({kind})"),
        }
    }
}

pub struct FsIndex {
    /// The canonical repository root.
    root: PathBuf,
    /// The walked directory, repo-relative.
    walked: String,
    /// What the walk of `walked` found (files sorted).
    found: Listing,
    /// `found.files` again, for existence checks: discovery makes many
    /// (`find_in_parent_folders` probes every directory up), and hashing a
    /// path beats comparing it with a dozen long ones that share its prefix.
    file_set: HashSet<String>,
    /// Generated directories (see [`FsIndex::generate`]); empty in a
    /// repository without stacks, which then pays one relaxed load per read.
    generated: RwLock<HashMap<String, GeneratedDir>>,
    has_generated: AtomicBool,
    /// Fetched trees (see [`FsIndex::mount`]), by mount name.
    mounts: RwLock<Vec<Mount>>,
    has_mounts: AtomicBool,
}

/// Where every mount's name starts: `..` is no part of a cleaned path.
const MOUNTS: &str = "../.cascade-sources";

/// A fetched tree, read under the name [`FsIndex::mount`] gave it.
#[derive(Clone, Debug)]
struct Mount {
    /// `../.cascade-sources/<n>`.
    name: String,
    /// The tree's canonical root: the wall inside it.
    tree: PathBuf,
    /// How a problem names the tree (the source without credentials).
    label: String,
}

/// Where the files of a generated directory really are.
#[derive(Clone, Debug)]
struct GeneratedDir {
    /// The repo-relative source directory generation copies from.
    source: String,
    /// Whether files of the directory itself count too (a unit generated
    /// with `no_dot_terragrunt_stack` lands in a directory that may exist).
    merged: bool,
}

/// What one walk found, at the paths it reached things by (repo-relative).
#[derive(Default)]
struct Listing {
    files: Vec<String>,
    dirs: HashSet<String>,
    /// Links the walk followed: path → the repo-relative path it resolves to.
    links: HashMap<String, String>,
    /// Links the walk refused, by path.
    refused: BTreeMap<String, Refusal>,
    truncated: Option<Truncation>,
}

/// A directory the walk found that holds a unit or stack configuration.
pub struct Candidate {
    pub dir: String,
    /// The configuration file (repo-relative): `terragrunt.hcl.json` when a
    /// directory has both it and `terragrunt.hcl`, as Terragrunt reads it.
    pub config: String,
    pub stack: bool,
}

impl FsIndex {
    /// Walks `walked` (repo-relative) under the canonical `root`, skipping
    /// cache and generated directories, stopping at `deadline`.
    pub fn walk(root: &Path, walked: &str, deadline: Option<Instant>) -> (FsIndex, Vec<Candidate>) {
        let mut found = walk_listing(root, walked, deadline, true);
        found.files.sort_unstable();
        let mut candidates: Vec<Candidate> = found
            .files
            .iter()
            .filter_map(|rel| {
                let name = rel.rsplit('/').next().unwrap_or(rel);
                let stack = name == STACK_CONFIG_NAME;
                (stack || UNIT_CONFIG_NAMES.contains(&name)).then(|| Candidate {
                    dir: paths::parent(rel).to_string(),
                    config: rel.clone(),
                    stack,
                })
            })
            .collect();
        // One unit per directory, configured by the file Terragrunt reads first.
        candidates.sort_by(|a, b| {
            let rank = |c: &Candidate| {
                UNIT_CONFIG_NAMES
                    .iter()
                    .position(|n| c.config.ends_with(n))
                    .unwrap_or(UNIT_CONFIG_NAMES.len())
            };
            a.dir.cmp(&b.dir).then(rank(a).cmp(&rank(b)))
        });
        candidates.dedup_by(|later, kept| later.dir == kept.dir && !later.stack && !kept.stack);
        (
            FsIndex {
                root: root.to_path_buf(),
                walked: walked.to_string(),
                file_set: found.files.iter().cloned().collect(),
                found,
                generated: RwLock::new(HashMap::new()),
                has_generated: AtomicBool::new(false),
                mounts: RwLock::new(Vec::new()),
                has_mounts: AtomicBool::new(false),
            },
            candidates,
        )
    }

    /// Declares that `dir` (repo-relative) is generated from `source`: reads
    /// under `dir` are served from `source` from now on. With `merged`, a
    /// file `source` lacks is looked for in `dir` itself.
    pub fn generate(&self, dir: &str, source: &str, merged: bool) {
        let mut generated = self.generated.write().unwrap_or_else(|p| p.into_inner());
        generated.insert(
            dir.to_string(),
            GeneratedDir {
                source: source.to_string(),
                merged,
            },
        );
        self.has_generated.store(true, Ordering::Release);
    }

    /// Mounts the fetched tree `tree` (an absolute directory outside the
    /// repository) and returns the name its files are read under, or `None`
    /// when the tree is not there. `label` is what problems call the tree
    /// instead of the name. One tree with one label is mounted once.
    pub fn mount(&self, tree: &Path, label: &str) -> Option<String> {
        let tree = std::fs::canonicalize(tree).ok().filter(|t| t.is_dir())?;
        let mut mounts = self.mounts.write().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = mounts.iter().find(|m| m.tree == tree && m.label == label) {
            return Some(m.name.clone());
        }
        let name = format!("{MOUNTS}/{}", mounts.len());
        mounts.push(Mount {
            name: name.clone(),
            tree,
            label: label.to_string(),
        });
        self.has_mounts.store(true, Ordering::Release);
        Some(name)
    }

    /// The tree and the path inside it, for a path under a mount.
    fn mounted(&self, rel: &str) -> Option<(PathBuf, String)> {
        if !self.has_mounts.load(Ordering::Acquire) || !rel.starts_with(MOUNTS) {
            return None;
        }
        let mounts = self.mounts.read().unwrap_or_else(|p| p.into_inner());
        let m = mounts.iter().find(|m| paths::is_within(rel, &m.name))?;
        let inside = rel[m.name.len()..].trim_start_matches('/').to_string();
        Some((m.tree.clone(), inside))
    }

    /// True when `rel` is under a mount: a fetched tree's file, no file of the repository.
    pub fn is_mounted(&self, rel: &str) -> bool {
        self.mounted(rel).is_some()
    }

    /// How a problem names `rel` when it is under a mount: the source, then the
    /// path inside the tree (`git::https://host/org/repo?ref=v1//units/db/terragrunt.hcl`).
    pub fn shown_mounted(&self, rel: &str) -> Option<String> {
        if !self.has_mounts.load(Ordering::Acquire) || !rel.starts_with(MOUNTS) {
            return None;
        }
        let mounts = self.mounts.read().unwrap_or_else(|p| p.into_inner());
        let m = mounts.iter().find(|m| paths::is_within(rel, &m.name))?;
        Some(format!("{}/{}", m.label, &rel[m.name.len()..]))
    }

    /// `text` with every mount's name replaced by its label, and the trees'
    /// absolute paths, for a message.
    pub fn unmounted_text(&self, text: &str) -> String {
        if !self.has_mounts.load(Ordering::Acquire) {
            return text.to_string();
        }
        let mounts = self.mounts.read().unwrap_or_else(|p| p.into_inner());
        let mut out = text.to_string();
        // The longest names first: `…/1` must not eat the start of `…/10`.
        let mut sorted: Vec<&Mount> = mounts.iter().collect();
        sorted.sort_by_key(|m| std::cmp::Reverse(m.name.len()));
        for m in sorted {
            if out.contains(&m.name) {
                out = out.replace(&format!("{}/", m.name), &format!("{}//", m.label));
                out = out.replace(&m.name, &m.label);
            }
            let tree = m.tree.to_string_lossy();
            if out.contains(tree.as_ref()) {
                out = out.replace(tree.as_ref(), &m.label);
            }
        }
        out
    }

    /// The canonical path of `inside` in `tree`, if it exists and stays in the tree.
    fn real_in(tree: &Path, inside: &str) -> Result<PathBuf, Probe> {
        match std::fs::canonicalize(tree.join(inside)) {
            Ok(real) if real.starts_with(tree) => Ok(real),
            Ok(_) => Err(Probe::Escapes),
            Err(_) => Err(Probe::Missing),
        }
    }

    /// The path `rel` is really read from: itself, or its place in the
    /// source of the generated directory it lies in (the nearest one). A
    /// source may itself lie in a generated directory (a nested stack whose
    /// source is relative to where it is generated), so this follows the
    /// chain, at most one step per stack level.
    pub fn physical<'r>(&self, rel: &'r str) -> Cow<'r, str> {
        if !self.has_generated.load(Ordering::Acquire) {
            return Cow::Borrowed(rel);
        }
        let mut path = Cow::Borrowed(rel);
        for _ in 0..=MAX_STACK_DEPTH + 1 {
            match self.physical_step(&path) {
                Some(next) => path = Cow::Owned(next),
                None => break,
            }
        }
        path
    }

    /// One step of [`Self::physical`]: `None` when `rel` lies in no generated
    /// directory (or is served from the directory itself).
    fn physical_step(&self, rel: &str) -> Option<String> {
        let generated = self.generated.read().unwrap_or_else(|p| p.into_inner());
        let mut found = None;
        for dir in prefixes(rel) {
            if let Some(g) = generated.get(dir) {
                found = Some((dir.len(), g.clone()));
            }
        }
        drop(generated);
        let (len, g) = found?;
        let rest = &rel[len..];
        let from_source = format!("{}{rest}", g.source);
        let from_source = paths::clean(&from_source).unwrap_or(from_source);
        if g.merged && !rest.is_empty() && self.probe_physical(&from_source) == Probe::Missing {
            // Generation copies over what the directory already holds.
            return None;
        }
        Some(from_source)
    }

    /// Whether any path may be read elsewhere than where it is named: the walk
    /// followed a symbolic link, or a stack declared a generated directory.
    pub fn has_links_or_generated(&self) -> bool {
        !self.found.links.is_empty() || self.has_generated.load(Ordering::Acquire)
    }

    /// Links the walk refused, by repo-relative path.
    pub fn refused(&self) -> &BTreeMap<String, Refusal> {
        &self.found.refused
    }

    /// Why the walk stopped early, if it did.
    pub fn truncated(&self) -> Option<Truncation> {
        self.found.truncated
    }

    fn covers(&self, rel: &str) -> bool {
        paths::is_within(rel, &self.walked) && !has_skipped_part(&rel[self.walked.len()..])
    }

    /// A refused link that `rel` is, or lies under.
    fn refused_prefix(&self, rel: &str) -> Option<Refusal> {
        if self.found.refused.is_empty() {
            return None;
        }
        prefixes(rel).find_map(|p| self.found.refused.get(p).copied())
    }

    /// What `rel` is. Paths the walk covered are lookups; others ask the
    /// filesystem, resolving links and refusing what leaves the root.
    pub fn probe(&self, rel: &str) -> Probe {
        self.probe_physical(&self.physical(rel))
    }

    fn probe_physical(&self, rel: &str) -> Probe {
        if let Some((tree, inside)) = self.mounted(rel) {
            return match FsIndex::real_in(&tree, &inside) {
                Err(probe) => probe,
                Ok(real) => metadata_probe(&real),
            };
        }
        if rel.is_empty() || rel == self.walked {
            return Probe::Dir;
        }
        if self.covers(rel) {
            match self.refused_prefix(rel) {
                Some(Refusal::Escapes) => return Probe::Escapes,
                // The walk stopped there to stay bounded; the path itself may be fine.
                Some(_) => return self.probe_os(rel),
                None => {}
            }
            if self.file_set.contains(rel) {
                return Probe::File;
            }
            if self.found.dirs.contains(rel) {
                return Probe::Dir;
            }
            return Probe::Missing;
        }
        self.probe_os(rel)
    }

    fn probe_os(&self, rel: &str) -> Probe {
        match self.real(rel) {
            Err(probe) => probe,
            Ok(real) => metadata_probe(&real),
        }
    }

    /// The canonical path of `rel`, if it exists and lies inside the root.
    fn real(&self, rel: &str) -> Result<PathBuf, Probe> {
        match std::fs::canonicalize(self.root.join(rel)) {
            Ok(real) if real.starts_with(&self.root) => Ok(real),
            Ok(_) => Err(Probe::Escapes),
            Err(_) => Err(Probe::Missing),
        }
    }

    pub fn is_file(&self, rel: &str) -> bool {
        self.probe(rel) == Probe::File
    }

    pub fn is_dir(&self, rel: &str) -> bool {
        self.probe(rel) == Probe::Dir
    }

    pub fn exists(&self, rel: &str) -> bool {
        matches!(self.probe(rel), Probe::File | Probe::Dir)
    }

    /// Reads a regular file inside the repository as UTF-8 text, refusing
    /// links that leave the root, special files, and files over `limit` bytes.
    pub fn read_text(&self, rel: &str, limit: u64) -> Result<String, ReadError> {
        let rel = &*self.physical(rel);
        if let Some((tree, inside)) = self.mounted(rel) {
            let real = match FsIndex::real_in(&tree, &inside) {
                Ok(real) => real,
                Err(Probe::Escapes) => return Err(ReadError::Escapes),
                Err(_) => return Err(ReadError::Missing),
            };
            return open_regular(&real, limit);
        }
        let direct = self.covers(rel)
            && self.refused_prefix(rel).is_none()
            && (self.found.links.is_empty()
                || prefixes(rel).all(|p| !self.found.links.contains_key(p)))
            && self.file_set.contains(rel);
        let path = if direct {
            // Indexed as a regular file with no link on its path: open it as is
            // (O_NOFOLLOW still refuses a link that appeared since the walk).
            self.root.join(rel)
        } else {
            match self.real(rel) {
                Ok(real) => real,
                Err(Probe::Escapes) => return Err(ReadError::Escapes),
                Err(_) => return Err(ReadError::Missing),
            }
        };
        open_regular(&path, limit)
    }

    /// Every file under directory `dir`, recursively, sorted (cache and
    /// generated directories skipped). Under a generated directory, the files
    /// of its source, named as generation would copy them.
    pub fn files_under(&self, dir: &str) -> Vec<String> {
        match self.physical(dir) {
            Cow::Borrowed(_) => self.files_under_walked(dir),
            Cow::Owned(source) => {
                let mut files: Vec<String> = self
                    .files_under_walked(&source)
                    .into_iter()
                    .map(|f| paths::join(dir, paths::relative(&source, &f).as_str()))
                    .collect();
                if self.generated_merged(dir) {
                    files.extend(self.files_under_walked(dir));
                    files.sort_unstable();
                    files.dedup();
                }
                files
            }
        }
    }

    fn generated_merged(&self, dir: &str) -> bool {
        let generated = self.generated.read().unwrap_or_else(|p| p.into_inner());
        generated.get(dir).is_some_and(|g| g.merged)
    }

    /// [`FsIndex::files_under`] of the files really there, generated directories not translated.
    pub fn files_under_walked(&self, dir: &str) -> Vec<String> {
        if let Some((tree, inside)) = self.mounted(dir) {
            // The tree walked as the repository is: links leaving it refused.
            let mut files = walk_listing(&tree, &inside, None, false).files;
            files.sort_unstable();
            let name = &dir[..dir.len() - inside.len()].trim_end_matches('/');
            return files.iter().map(|f| paths::join(name, f)).collect();
        }
        if self.covers(dir) || (dir.is_empty() && self.walked.is_empty()) {
            if self.refused_prefix(dir) == Some(Refusal::Escapes) {
                return Vec::new();
            }
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                paths::join(dir, "")
            };
            let start = self
                .found
                .files
                .partition_point(|f| f.as_str() < prefix.as_str());
            self.found.files[start..]
                .iter()
                .take_while(|f| f.starts_with(&prefix))
                .cloned()
                .collect()
        } else {
            // In one thread: this runs inside a unit's evaluation, which must not
            // wait on a rayon scope (the worker would take up another unit's
            // evaluation on top of this one: thread-local read stacks and memo
            // locks are not made for that).
            let mut files = walk_listing(&self.root, dir, None, false).files;
            files.sort_unstable();
            files
        }
    }

    /// Files directly inside `dir` (not recursive).
    pub fn files_in(&self, dir: &str) -> Vec<String> {
        self.files_under(dir)
            .into_iter()
            .filter(|f| paths::parent(f) == dir)
            .collect()
    }

    /// The real repo-relative path of `rel` and the links on its way (each at
    /// its own real path), when the walk reached it through a symbolic link;
    /// `None` when no link is involved.
    pub fn through_links(&self, rel: &str) -> Option<(String, Vec<String>)> {
        if self.found.links.is_empty() {
            return None;
        }
        let rel = &*self.physical(rel);
        let mut real = String::new();
        let mut crossed = Vec::new();
        for (prefix, part) in prefixes(rel).zip(rel.split('/')) {
            match self.found.links.get(prefix) {
                Some(target) => {
                    // The link itself, where git keeps it.
                    crossed.push(paths::join(&real, part));
                    real = target.clone();
                }
                None => real = paths::join(&real, part),
            }
        }
        (!crossed.is_empty()).then_some((real, crossed))
    }
}

/// What the real path `real` is.
fn metadata_probe(real: &Path) -> Probe {
    match std::fs::metadata(real) {
        Ok(m) if m.is_file() => Probe::File,
        Ok(m) if m.is_dir() => Probe::Dir,
        Ok(_) => Probe::Special,
        Err(_) => Probe::Missing,
    }
}

/// Opens `path` without following a link and reads it as [`read_regular`] does.
fn open_regular(path: &Path, limit: u64) -> Result<String, ReadError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ReadError::Missing,
            kind => ReadError::Failed(kind.to_string()),
        })?;
    read_regular(file, limit)
}

/// Reads an opened file that must be regular and at most `limit` bytes.
fn read_regular(file: File, limit: u64) -> Result<String, ReadError> {
    let meta = file
        .metadata()
        .map_err(|e| ReadError::Failed(e.kind().to_string()))?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Failed(e.kind().to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotText)
}

/// `a`, `a/b`, `a/b/c` for `a/b/c`.
fn prefixes(rel: &str) -> impl Iterator<Item = &str> {
    rel.match_indices('/')
        .map(|(i, _)| &rel[..i])
        .chain(std::iter::once(rel))
}

fn is_skipped_dir(name: &str) -> bool {
    SKIPPED_DIRS.contains(&name)
}

/// Whether a part of `path` is a skipped directory. Every skipped name starts
/// with a dot, and most paths have no part that does: those are answered
/// without splitting (discovery asks millions of times).
fn has_skipped_part(path: &str) -> bool {
    (path.starts_with('.') || path.contains("/.")) && path.split('/').any(is_skipped_dir)
}

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;
