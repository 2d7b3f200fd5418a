//! Reading one policy set's `.rego` files from a tree (the default branch's checkout).
//!
//! Owns: which files are a policy set (every `*.rego` under the set's directory,
//! `*_test.rego` kept apart for `cascade policy test`), their order (by path, so the
//! same tree always compiles the same way) and the refusals: a symlink, a path that
//! leaves the tree, an oversized file or set. Must never: follow a link, read outside
//! `root`, or quote a file's contents in an error.

use super::PolicyError;
use super::limits::{
    MAX_POLICY_DIR_DEPTH, MAX_POLICY_FILE_BYTES, MAX_POLICY_FILES, MAX_POLICY_SET_BYTES,
};
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Component, Path};

/// One `.rego` file of a policy set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFile {
    /// The file's path relative to the tree's root, `/`-separated: what errors name.
    pub path: String,
    /// The file's text.
    pub text: String,
}

impl PolicyFile {
    /// Whether the file holds tests (`*_test.rego`), run by `cascade policy test` only.
    pub fn is_test(&self) -> bool {
        self.path.ends_with("_test.rego")
    }
}

/// Every `.rego` file under `root/rel_dir`, sorted by path.
pub fn load_set(root: &Path, rel_dir: &str) -> Result<Vec<PolicyFile>, PolicyError> {
    let refuse = |path: &str, reason: &str| PolicyError::File {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    let rel = Path::new(rel_dir);
    if rel_dir.is_empty()
        || !rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(refuse(
            rel_dir,
            "a policy directory must be a relative path inside the repository, without `..`",
        ));
    }
    // Every directory from the root down to the set's own must be a directory, not a link.
    let mut dir = root.to_path_buf();
    for part in rel.components() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(refuse(
                    &display(root, &dir),
                    "is a symlink; cascade follows none",
                ));
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(refuse(&display(root, &dir), "is not a directory"));
            }
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(PolicyError::MissingDir {
                    dir: rel_dir.to_string(),
                });
            }
            Err(err) => return Err(refuse(&display(root, &dir), &err.to_string())),
        }
    }

    let mut files = Vec::new();
    let mut total = 0u64;
    let walk = walkdir::WalkDir::new(&dir)
        .follow_links(false)
        .max_depth(MAX_POLICY_DIR_DEPTH)
        .sort_by_file_name();
    for entry in walk {
        let entry = entry.map_err(|err| {
            let path = err.path().map(|p| display(root, p)).unwrap_or_default();
            refuse(&path, "cannot be read")
        })?;
        let path = display(root, entry.path());
        let file_type = entry.file_type();
        if file_type.is_dir() {
            continue;
        }
        if !path.ends_with(".rego") {
            continue;
        }
        if file_type.is_symlink() {
            return Err(refuse(&path, "is a symlink; cascade follows none"));
        }
        if !file_type.is_file() {
            return Err(refuse(&path, "is not a regular file"));
        }
        if files.len() == MAX_POLICY_FILES {
            return Err(PolicyError::TooLarge {
                dir: rel_dir.to_string(),
                what: format!("more than {MAX_POLICY_FILES} .rego files"),
            });
        }
        let text = read_file(entry.path()).map_err(|reason| refuse(&path, &reason))?;
        total += text.len() as u64;
        if total > MAX_POLICY_SET_BYTES {
            return Err(PolicyError::TooLarge {
                dir: rel_dir.to_string(),
                what: format!(
                    "more than {} MiB of .rego files",
                    MAX_POLICY_SET_BYTES >> 20
                ),
            });
        }
        files.push(PolicyFile { path, text });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The file's text, opened without following a link or waiting on a FIFO.
fn read_file(path: &Path) -> Result<String, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| format!("cannot be opened ({})", err.kind()))?;
    let meta = file
        .metadata()
        .map_err(|err| format!("cannot be read ({})", err.kind()))?;
    if !meta.is_file() {
        return Err("is not a regular file".to_string());
    }
    let too_large = || format!("is larger than {} KiB", MAX_POLICY_FILE_BYTES >> 10);
    if meta.len() > MAX_POLICY_FILE_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(MAX_POLICY_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot be read ({})", err.kind()))?;
    if bytes.len() as u64 > MAX_POLICY_FILE_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
}

/// `path` relative to `root`, `/`-separated (the whole path if it is not under `root`).
fn display(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}
