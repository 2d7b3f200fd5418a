//! Finding the repository around `--repo` and discovering its graph, shared by
//! the commands.

use crate::config::RepoConfig;
use crate::graph::Graph;
use crate::problem::Problem;
use crate::terragrunt::{self, DiscoverOptions, Discovery};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

/// A discovered repository: configuration, units, graph, and every problem found on the way.
pub struct Scan {
    pub config: RepoConfig,
    pub discovery: Discovery,
    pub graph: Graph,
    pub problems: Vec<Problem>,
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

/// Loads `.cascade.yaml` from `dir` and discovers the graph under it. A broken
/// configuration is reported as a problem and discovery goes on without it.
pub fn scan(dir: &Path, root: &Path, features: &[(String, String)]) -> Scan {
    let mut problems = Vec::new();
    let config = RepoConfig::load(dir).unwrap_or_else(|problem| {
        problems.push(problem);
        RepoConfig::default()
    });
    let opts = DiscoverOptions {
        dir: dir.to_path_buf(),
        repo_root: root.to_path_buf(),
        config: config.clone(),
        env: Default::default(),
        features: features.iter().cloned().collect(),
    };
    let discovery = terragrunt::discover(&opts);
    let (graph, cycle_problems) = discovery.graph();
    problems.extend(discovery.problems.iter().cloned());
    problems.extend(cycle_problems);
    problems.sort();
    Scan {
        config,
        discovery,
        graph,
        problems,
    }
}
