//! Finding the repository around `--repo` and discovering its graph, shared by
//! the commands: remote stack sources fetched with the user's own git into the
//! user's cache ([`source_cache`]), each ref resolved once per command.

use crate::catalog::{Access, Catalog};
use crate::config::RepoConfig;
pub use crate::scan::Scan;
use crate::terragrunt::paths;
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

/// Where a command works, worked out once from `--repo` and the current directory.
pub struct Location {
    /// The directory discovered, whose `.cascade.yaml` applies, and which unit paths are
    /// relative to: `--repo` when given, else the repository root.
    pub dir: PathBuf,
    /// The repository root: the git top-level around `dir`, or `dir` itself outside git.
    pub root: PathBuf,
    /// Where relative `--changed` paths start: `--repo` when given, else the current
    /// directory (as git reads a path given from a subdirectory).
    pub changed_from: PathBuf,
    /// True when `--repo` (or `CASCADE_REPO`) named the directory.
    pub explicit: bool,
}

impl Location {
    /// `dir` relative to the root, `""` at the root.
    pub fn prefix(&self) -> String {
        let prefix = paths::relative(&self.root.to_string_lossy(), &self.dir.to_string_lossy());
        if prefix == "." { String::new() } else { prefix }
    }
}

/// Where a command works. Without `--repo`, as git does: from the top level of the git
/// repository around the current directory (the current directory itself outside git),
/// so the root's `.cascade.yaml` applies wherever in the repository cascade is run.
/// With `--repo`, that directory, as given; a `.cascade.yaml` above it is then not read,
/// and a note on stderr says so rather than leaving the user to wonder.
pub fn locate(repo: Option<&Path>) -> anyhow::Result<Location> {
    let Some(repo) = repo else {
        let cwd = std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .context("cannot open the current directory; run cascade from an existing directory")?;
        let root = crate::git::toplevel(&cwd)
            .and_then(|t| std::fs::canonicalize(t).ok())
            .unwrap_or_else(|| cwd.clone());
        return Ok(Location {
            dir: root.clone(),
            root,
            changed_from: cwd,
            explicit: false,
        });
    };
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
    if let Some(above) = config_above(&dir, &root) {
        eprintln!(
            "cascade: note: --repo {} holds no .cascade.yaml, so cascade runs with the defaults; {} applies only with --repo {} (or without --repo)",
            dir.display(),
            above.join(crate::config::FILE_NAME).display(),
            above.display()
        );
    }
    Ok(Location {
        dir: dir.clone(),
        root,
        changed_from: dir,
        explicit: true,
    })
}

/// The nearest directory above `dir`, up to the repository `root`, holding a
/// `.cascade.yaml`, when `dir` holds none.
fn config_above(dir: &Path, root: &Path) -> Option<PathBuf> {
    let has_config = |d: &Path| d.join(crate::config::FILE_NAME).symlink_metadata().is_ok();
    if has_config(dir) || !dir.starts_with(root) {
        return None;
    }
    dir.ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(root))
        .find(|d| has_config(d))
        .map(Path::to_path_buf)
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

/// `--changed` files as discovery names them: relative to the discovery directory
/// (inside the repository root), cleaned, with `..` parts for files above it. Relative
/// paths start where [`Location::changed_from`] says. A file outside the repository, or
/// one that is neither in the working tree nor in the checked-out commit (a typo), is
/// refused: nothing there can affect a unit, and "0 units" would read as "nothing to plan".
pub fn changed_paths(at: &Location, changed: &[String]) -> anyhow::Result<Vec<String>> {
    let root = at.root.as_path();
    let prefix = at.prefix();
    let from = at.changed_from.strip_prefix(root).unwrap_or(Path::new(""));
    let from = from.to_string_lossy();
    let relative_to = if at.explicit {
        format!("relative to --repo, {}", at.dir.display())
    } else {
        format!(
            "relative to the current directory, {}",
            at.changed_from.display()
        )
    };
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
                crate::terragrunt::paths::clean(&format!("{from}/{file}"))
            };
            match in_root {
                Some(rel)
                    if !rel.is_empty()
                        && root.join(&rel).symlink_metadata().is_err()
                        && !crate::git::has_file_at(root, "HEAD", &rel) =>
                {
                    bail!(
                        "--changed {}: no such file in the working tree or in the checked-out commit; check the path ({relative_to}), or compare two revisions with --base",
                        crate::inert::visible_line(file),
                    )
                }
                Some(rel) if !rel.is_empty() => {
                    Ok(crate::git::relative_to_prefix(&rel, &prefix))
                }
                _ => bail!(
                    "--changed {} is not a file inside the repository {}: give the changed files {relative_to}",
                    crate::inert::visible_line(file),
                    root.display(),
                ),
            }
        })
        .collect()
}
