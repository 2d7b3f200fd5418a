//! Discovery with remote sources: discover, fetch what the stacks asked for, discover
//! again, until nothing new is asked for.
//!
//! Owns: the loop between the pure, network-free discovery (`scan::scan_sourced`, which
//! names the git sources it lacks) and the fetches, and the one map of a plan's sources,
//! so each (repository, ref) is resolved once per plan: a branch that moves while a plan
//! is made gives every unit the same commit. Never: fetches a key twice, evaluates
//! anything itself, or loops past [`MAX_STACK_DEPTH`] rounds (a remote stack nests one
//! level per round).

use super::Catalog;
use crate::config::RepoConfig;
use crate::scan::{Scan, scan_sourced};
use crate::terragrunt::limits::MAX_STACK_DEPTH;
use crate::terragrunt::remote_source::{FetchedSource, GitSource, Sources};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

impl Catalog {
    /// Runs `discover` with `sources`, fetches every source it names that `sources` lacks
    /// (each key once; a failure is kept as its reason, shown in the units' problems), and
    /// runs it again, until it names nothing new or after [`MAX_STACK_DEPTH`] rounds
    /// (what is still missing then stays unresolved). Returns the last discovery.
    ///
    /// `discover` is blocking and CPU-bound: the server runs it where blocking is allowed
    /// (`tokio::task::block_in_place`, or the whole loop on a blocking thread with
    /// `Handle::block_on`).
    pub async fn discover_with_sources<T>(
        &self,
        sources: &mut Sources,
        mut discover: impl FnMut(&Sources) -> (T, Vec<GitSource>),
    ) -> T {
        let mut rounds = 0;
        loop {
            let (found, wanted) = discover(sources);
            let new: BTreeMap<_, GitSource> = wanted
                .into_iter()
                .map(|git| (git.key(), git))
                .filter(|(key, _)| !sources.contains_key(key))
                .collect();
            if new.is_empty() || rounds > MAX_STACK_DEPTH {
                return found;
            }
            rounds += 1;
            for (key, git) in new {
                let fetched = self
                    .fetch(&git)
                    .await
                    .map(|tree| FetchedSource {
                        dir: tree.dir,
                        commit: tree.commit,
                    })
                    .map_err(|e| e.to_string());
                sources.insert(key, fetched);
            }
        }
    }

    /// `scan::scan_with` (stopping at `deadline`, if any) with the remote sources its
    /// stacks name fetched through this catalog, recorded in `sources` (one map per plan:
    /// the base revision's scan shares the head's).
    pub async fn scan(
        &self,
        dir: &Path,
        root: &Path,
        config: RepoConfig,
        features: &[(String, String)],
        deadline: Option<Instant>,
        sources: &mut Sources,
    ) -> Scan {
        self.discover_with_sources(sources, |sources| {
            scan_sourced(dir, root, config.clone(), features, deadline, sources)
        })
        .await
    }
}
