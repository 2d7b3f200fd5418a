//! A fetched commit's tree, written to a directory within the limits and made read-only.
//!
//! Owns: counting the tree before anything is written (entries and blob sizes, from
//! object headers: a huge blob is refused without being read) and the read-only
//! permissions afterwards. Never: follows a symbolic link while writing or walking
//! (links are written as links; discovery's wall judges where they lead).

use super::{FetchError, SourceLimits};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Writes the tree of `commit` in the bare repository `git_dir` to `dest`, read-only.
pub fn write(
    git_dir: &Path,
    commit: &str,
    dest: &Path,
    limits: &SourceLimits,
) -> Result<(), FetchError> {
    let cache = |e: &dyn std::fmt::Display| FetchError::Cache(e.to_string());
    within_limits(git_dir, commit, limits)?;
    crate::git::materialize(git_dir, commit, dest).map_err(|e| cache(&format!("{e:#}")))?;
    read_only(dest).map_err(|e| cache(&e))
}

/// Refuses a tree with more entries or bytes than the limits allow.
fn within_limits(git_dir: &Path, commit: &str, limits: &SourceLimits) -> Result<(), FetchError> {
    let cache = |e: git2::Error| FetchError::Cache(e.message().to_string());
    let repo = git2::Repository::open_bare(git_dir).map_err(cache)?;
    let odb = repo.odb().map_err(cache)?;
    let oid = git2::Oid::from_str(commit).map_err(cache)?;
    let tree = repo
        .find_commit(oid)
        .map_err(cache)?
        .tree()
        .map_err(cache)?;
    let (mut entries, mut bytes) = (0usize, 0u64);
    let mut over = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        entries += 1;
        if entry.kind() == Some(git2::ObjectType::Blob)
            && let Ok((size, _)) = odb.read_header(entry.id())
        {
            bytes += size as u64;
        }
        if entries > limits.files {
            over = Some(format!(
                "the source's tree exceeds cascade's limit of {} files and directories",
                limits.files
            ));
        } else if bytes > limits.tree_bytes {
            over = Some(format!(
                "the source's tree exceeds cascade's limit of {}",
                super::size(limits.tree_bytes)
            ));
        }
        if over.is_some() {
            git2::TreeWalkResult::Abort
        } else {
            git2::TreeWalkResult::Ok
        }
    })
    .or_else(|e| {
        if over.is_some() {
            Ok(())
        } else {
            Err(cache(e))
        }
    })?;
    match over {
        Some(why) => Err(FetchError::TooLarge(why)),
        None => Ok(()),
    }
}

/// Files 0444 (0555 when executable), directories 0555; links are left alone.
fn read_only(dir: &Path) -> std::io::Result<()> {
    // Children first: a directory made read-only cannot have its entries changed.
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .contents_first(true)
    {
        let entry = entry.map_err(std::io::Error::other)?;
        let kind = entry.file_type();
        if kind.is_symlink() {
            continue;
        }
        let mode = entry
            .metadata()
            .map_err(std::io::Error::other)?
            .permissions()
            .mode();
        let read_only = if kind.is_dir() || mode & 0o111 != 0 {
            0o555
        } else {
            0o444
        };
        std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(read_only))?;
    }
    Ok(())
}

/// Removes a read-only tree nobody will use (another fetch cached the same commit).
pub fn discard(dir: &Path) {
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        if entry.file_type().is_dir() {
            let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
