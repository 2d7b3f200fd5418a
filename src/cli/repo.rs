//! Finding the repository around `--repo` and discovering its graph, shared by
//! the commands.

use crate::config::RepoConfig;
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

/// Discovers `dir` for a command that runs terraform (`plan`, `drift`): unlike `graph`,
/// which reports a broken `.cascade.yaml` and goes on, these refuse to run with the
/// defaults in its place (another executor, no `ignore`), as the bot refuses to plan.
pub fn scan_to_run(dir: &Path, root: &Path, command: &str) -> anyhow::Result<Scan> {
    let config = RepoConfig::load(dir).map_err(|problem| {
        anyhow::anyhow!(
            "{problem}\n`{command}` does not run with a `.cascade.yaml` it cannot read: fix it \
             (`cascade graph` lists every problem), then run `{command}` again"
        )
    })?;
    Ok(crate::scan::scan_with(dir, root, config, &[]))
}

/// `--changed` files as discovery names them: relative to `dir` (the discovery
/// directory, inside the repository `root`), cleaned, with `..` parts for files above
/// `dir`. A file outside the repository is refused: nothing there can affect a unit,
/// and "0 units" would read as "nothing to plan".
pub fn changed_paths(dir: &Path, root: &Path, changed: &[String]) -> anyhow::Result<Vec<String>> {
    let prefix = dir.strip_prefix(root).unwrap_or(Path::new(""));
    let prefix = prefix.to_string_lossy();
    changed
        .iter()
        .map(|file| {
            let given = Path::new(file);
            // As git names files: a backslash is part of a name, not a separator.
            let in_root = if given.is_absolute() {
                given
                    .strip_prefix(root)
                    .ok()
                    .map(|rel| rel.to_string_lossy().into_owned())
                    .and_then(|rel| crate::terragrunt::paths::clean(&rel))
            } else {
                crate::terragrunt::paths::clean(&format!("{prefix}/{file}"))
            };
            match in_root {
                Some(rel) if !rel.is_empty() => {
                    Ok(crate::git::relative_to_prefix(&rel, &prefix))
                }
                _ => bail!(
                    "--changed {} is not a file inside the repository {}: give the changed files relative to --repo ({})",
                    crate::inert::visible_line(file),
                    root.display(),
                    dir.display()
                ),
            }
        })
        .collect()
}
