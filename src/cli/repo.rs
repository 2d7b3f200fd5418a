//! Finding the repository around `--repo` and discovering its graph, shared by
//! the commands: remote stack sources fetched with the user's own git into the
//! user's cache ([`source_cache`]), each ref resolved once per command.

use crate::catalog::{Access, Catalog};
use crate::config::RepoConfig;
pub use crate::scan::Scan;
use crate::terragrunt::remote_source::Sources;
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

/// Where the CLI keeps fetched remote sources: `$XDG_CACHE_HOME/cascade/sources`
/// (`~/.cache/cascade/sources`). Not under the repository: discovery walks hidden
/// directories, and a cached catalog's units would be discovered as the repository's.
/// Trees are cached per commit and never change, so repositories share them.
pub fn source_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("cascade").join("sources")
}

/// The catalog the CLI fetches remote sources through: the user's own git.
pub fn catalog() -> Catalog {
    let root = source_cache();
    Catalog::new(root, Access::User)
}

/// Loads `.cascade.yaml` from `dir` and discovers the graph under it, remote sources
/// fetched (recorded in `sources`, which a second scan of the same command shares). A
/// broken configuration is reported as a problem and discovery goes on without it.
pub async fn scan_async(
    dir: &Path,
    root: &Path,
    features: &[(String, String)],
    sources: &mut Sources,
) -> Scan {
    let (config, problem) = crate::scan::config_or_default(dir);
    let mut scan = catalog()
        .scan(dir, root, config, features, None, sources)
        .await;
    scan.problems.extend(problem);
    scan.problems.sort();
    scan
}

/// [`scan_async`] for a command without a runtime of its own (`graph`, `affected`).
pub fn scan(
    dir: &Path,
    root: &Path,
    features: &[(String, String)],
    sources: &mut Sources,
) -> anyhow::Result<Scan> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime that fetches remote sources")?;
    Ok(runtime.block_on(scan_async(dir, root, features, sources)))
}

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
pub async fn scan_to_run(
    dir: &Path,
    root: &Path,
    command: &str,
    sources: &mut Sources,
) -> anyhow::Result<Scan> {
    let config = RepoConfig::load(dir).map_err(|problem| {
        anyhow::anyhow!(
            "{problem}\n`{command}` does not run with a `.cascade.yaml` it cannot read: fix it \
             (`cascade graph` lists every problem), then run `{command}` again"
        )
    })?;
    Ok(catalog().scan(dir, root, config, &[], None, sources).await)
}

/// `--changed` files as discovery names them: relative to `dir` (the discovery
/// directory, inside the repository `root`), cleaned, with `..` parts for files above
/// `dir`. A file outside the repository, or one that is neither in the working tree nor
/// in the checked-out commit (a typo), is refused: nothing there can affect a unit, and
/// "0 units" would read as "nothing to plan".
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
                Some(rel)
                    if !rel.is_empty()
                        && root.join(&rel).symlink_metadata().is_err()
                        && !crate::git::has_file_at(root, "HEAD", &rel) =>
                {
                    bail!(
                        "--changed {}: no such file in the working tree or in the checked-out commit; check the path (relative to --repo, {}), or compare two revisions with --base",
                        crate::inert::visible_line(file),
                        dir.display()
                    )
                }
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
