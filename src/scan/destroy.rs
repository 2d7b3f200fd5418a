//! The plan targets of a `/destroy`: units that still exist at the head, each planned as
//! a destroy from the head's own tree (where their state is), in reverse waves: a unit
//! after every unit of the destroy that depends on it. Never decides which units may be
//! destroyed (the bot checks globs, dependents and `prevent_destroy` first) and never
//! runs anything.

use super::PlanTarget;
use super::targets::at_head;
use crate::discovery::{Discovery, UnitKind};
use crate::graph::Graph;
use crate::unit::UnitPath;
use std::collections::BTreeSet;
use std::path::Path;

/// `units` of `head` (discovered in `head_dir`) as destroy targets: wave 1 holds the units
/// no other unit of `units` depends on, and each unit waits for its dependents among
/// `units`. Stacks are left out (the units they generate are destroyed themselves).
pub fn destroy_targets(
    head: &Discovery,
    graph: &Graph,
    head_dir: &Path,
    units: &BTreeSet<UnitPath>,
) -> Vec<PlanTarget> {
    let failures = head.failures();
    let mut out = Vec::new();
    for (i, wave) in graph.waves_down_of(units).iter().enumerate() {
        for path in wave {
            let Some(unit) = head.unit(path).filter(|u| u.kind != UnitKind::Stack) else {
                continue;
            };
            let failure = failures.get(path).map(|p| p.to_string());
            let deps: Vec<UnitPath> = graph
                .dependents(path)
                .into_iter()
                .filter(|d| units.contains(*d))
                .cloned()
                .collect();
            out.push(at_head(unit, head_dir, i + 1, deps, true, failure));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scan;

    fn example() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live")
    }

    #[test]
    fn dependents_are_destroyed_first_and_each_waits_for_its_dependents() {
        let dir = example();
        let head = scan(&dir, &dir, &[]);
        let units: BTreeSet<UnitPath> = ["dev/app", "dev/dns", "global/dns", "prod/dns"]
            .into_iter()
            .map(UnitPath::new)
            .collect();
        let targets = destroy_targets(&head.discovery, &head.graph, &dir, &units);
        let order: Vec<(usize, &str, Vec<&str>)> = targets
            .iter()
            .map(|t| {
                (
                    t.wave,
                    t.path.as_str(),
                    t.deps.iter().map(|d| d.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                (1, "dev/dns", vec![]),
                (1, "prod/dns", vec![]),
                (2, "dev/app", vec!["dev/dns"]),
                (2, "global/dns", vec!["dev/dns", "prod/dns"]),
            ]
        );
        assert!(targets.iter().all(|t| t.destroy && t.root == dir));
        assert_eq!(targets[0].dir, dir.join("dev/dns"));
    }
}
