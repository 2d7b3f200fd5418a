//! Finding the repository around `--repo` and discovering its graph, shared by
//! the commands.

pub use crate::scan::{Scan, scan};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

/// The directory to discover and the repository root around it (the git
/// top-level, or the directory itself outside git).
pub fn locate(repo: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    if !repo.is_dir() {
        bail!(
            "{} is not a directory; pass the repository with --repo DIR",
            repo.display()
        );
    }
    let dir =
        std::fs::canonicalize(repo).with_context(|| format!("cannot open {}", repo.display()))?;
    let root = crate::git::toplevel(&dir)
        .and_then(|t| std::fs::canonicalize(t).ok())
        .unwrap_or_else(|| dir.clone());
    Ok((dir, root))
}
