//! The repository's files as discovery sees them: one walk of the discovery
//! directory builds a sorted index, so existence checks and "files under this
//! directory" are lookups instead of system calls. Paths the walk did not cover
//! (hidden directories, places outside the discovery directory) fall back to
//! the filesystem, but never beyond the repository root.

use super::paths;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Directory names the walk never enters (Terragrunt's `SkipDirIfIgnorable`),
/// besides every hidden directory.
const SKIPPED_DIRS: &[&str] = &[".git", ".terraform", ".terragrunt-cache"];

pub struct FsIndex {
    root: PathBuf,
    /// The walked directory, repo-relative.
    walked: String,
    /// Every file under `walked`, repo-relative, sorted.
    files: Vec<String>,
    dirs: HashSet<String>,
}

/// A directory the walk found that holds a unit or stack configuration.
pub struct Candidate {
    pub dir: String,
    pub stack: bool,
}

impl FsIndex {
    /// Walks `walked` (repo-relative) under `root`, skipping hidden and cache directories.
    pub fn walk(root: &Path, walked: &str) -> (FsIndex, Vec<Candidate>) {
        let start = root.join(walked);
        let mut files = Vec::new();
        let mut dirs = HashSet::new();
        let mut candidates = Vec::new();
        let walker = walkdir::WalkDir::new(&start)
            .follow_links(true)
            .into_iter()
            .filter_entry(|e| {
                e.depth() == 0
                    || !e.file_type().is_dir()
                    || !is_skipped_dir(&e.file_name().to_string_lossy())
            });
        for entry in walker.filter_map(Result::ok) {
            let Ok(rel) = entry.path().strip_prefix(root) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            if entry.file_type().is_dir() {
                dirs.insert(rel);
                continue;
            }
            let name = entry.file_name().to_string_lossy();
            if name == "terragrunt.hcl" || name == "terragrunt.stack.hcl" {
                candidates.push(Candidate {
                    dir: paths::parent(&rel).to_string(),
                    stack: name == "terragrunt.stack.hcl",
                });
            }
            files.push(rel);
        }
        files.sort_unstable();
        candidates.sort_by(|a, b| a.dir.cmp(&b.dir).then(a.stack.cmp(&b.stack)));
        (
            FsIndex {
                root: root.to_path_buf(),
                walked: walked.to_string(),
                files,
                dirs,
            },
            candidates,
        )
    }

    fn covers(&self, rel: &str) -> bool {
        paths::is_within(rel, &self.walked)
            && rel[self.walked.len()..]
                .split('/')
                .all(|part| part.is_empty() || !is_skipped_dir(part))
    }

    pub fn is_file(&self, rel: &str) -> bool {
        if self.covers(rel) {
            self.files.binary_search_by(|f| f.as_str().cmp(rel)).is_ok()
        } else {
            self.root.join(rel).is_file()
        }
    }

    pub fn is_dir(&self, rel: &str) -> bool {
        if rel.is_empty() || rel == self.walked {
            return true;
        }
        if self.covers(rel) {
            self.dirs.contains(rel)
        } else {
            self.root.join(rel).is_dir()
        }
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.is_file(rel) || self.is_dir(rel)
    }

    pub fn read_to_string(&self, rel: &str) -> std::io::Result<String> {
        std::fs::read_to_string(self.root.join(rel))
    }

    /// Every file under directory `dir`, recursively, sorted (cache and hidden directories skipped).
    pub fn files_under(&self, dir: &str) -> Vec<String> {
        if self.covers(dir) || (dir.is_empty() && self.walked.is_empty()) {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            let start = self.files.partition_point(|f| f.as_str() < prefix.as_str());
            self.files[start..]
                .iter()
                .take_while(|f| f.starts_with(&prefix))
                .cloned()
                .collect()
        } else {
            let mut out = Vec::new();
            let walker = walkdir::WalkDir::new(self.root.join(dir))
                .into_iter()
                .filter_entry(|e| {
                    e.depth() == 0
                        || !e.file_type().is_dir()
                        || !is_skipped_dir(&e.file_name().to_string_lossy())
                });
            for entry in walker
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file())
            {
                if let Ok(rel) = entry.path().strip_prefix(&self.root) {
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
            out.sort();
            out
        }
    }

    /// Files directly inside `dir` (not recursive).
    pub fn files_in(&self, dir: &str) -> Vec<String> {
        self.files_under(dir)
            .into_iter()
            .filter(|f| paths::parent(f) == dir)
            .collect()
    }
}

fn is_skipped_dir(name: &str) -> bool {
    name.starts_with('.') || SKIPPED_DIRS.contains(&name)
}
