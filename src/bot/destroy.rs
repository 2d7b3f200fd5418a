//! `/destroy unit…`: which units a destroy takes, and the refusals that stop it before
//! anything runs. The globs are matched against the head's units (a unit still in the
//! code: one the pull request deletes is destroyed by its own plan); every unit that
//! depends on a matched one must be named too, and no unit the default branch's
//! `prevent_destroy` protects may be among them. The plan itself is made by
//! `plan::plan_destroy`, from the head's tree, in reverse waves (`scan::destroy_targets`),
//! against the head itself: a plan whose base is its head destroys units that still
//! exist there, which is how an apply tells it from a plan of deleted units.
//! Never runs anything and never posts.

use super::discover::Discovered;
use super::refusal::DestroyRefusal;
use crate::command::UnitGlob;
use crate::discovery::UnitKind;
use crate::scan::{Scan, destroy_targets};
use crate::unit::UnitPath;
use std::collections::BTreeSet;
use std::path::Path;

/// What a `/destroy` asks: its globs, and the default branch whose rules protect units.
#[derive(Clone, Debug)]
pub struct DestroyAsk {
    pub globs: Vec<UnitGlob>,
    pub branch: String,
}

/// The units `ask` destroys at `head` (discovered with the default branch's rules), or
/// why none is: a glob that matches no unit, a protected unit among them or among their
/// dependents, or a dependent left out.
pub fn destroy_scope(head: &Scan, ask: &DestroyAsk) -> Result<BTreeSet<UnitPath>, DestroyRefusal> {
    let units: Vec<&UnitPath> = head
        .discovery
        .units
        .iter()
        .filter(|u| u.kind != UnitKind::Stack)
        .map(|u| &u.path)
        .collect();
    let unmatched: Vec<String> = ask
        .globs
        .iter()
        .filter(|glob| !units.iter().any(|u| glob.matches(u)))
        .map(|glob| glob.to_string())
        .collect();
    if !unmatched.is_empty() {
        return Err(DestroyRefusal::NoUnitMatched { globs: unmatched });
    }
    let matched: BTreeSet<UnitPath> = units
        .into_iter()
        .filter(|u| ask.globs.iter().any(|glob| glob.matches(u)))
        .cloned()
        .collect();
    let dependents = head.graph.dependents_closure(matched.iter());
    // Protection first: naming the dependents would only lead to this refusal.
    let protected: Vec<_> = matched
        .iter()
        .chain(dependents.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter_map(|u| {
            head.config
                .prevent_destroy
                .protecting(u)
                .map(|why| (u.clone(), why))
        })
        .collect();
    if !protected.is_empty() {
        return Err(DestroyRefusal::Protected {
            branch: ask.branch.clone(),
            units: protected,
            applying: None,
        });
    }
    let left_out: Vec<(UnitPath, UnitPath)> = dependents
        .into_iter()
        .filter(|(dependent, _)| !matched.contains(dependent))
        .collect();
    if !left_out.is_empty() {
        return Err(DestroyRefusal::DependentsLeftOut {
            globs: ask.globs.iter().map(|g| g.to_string()).collect(),
            dependents: left_out,
        });
    }
    Ok(matched)
}

/// What discovery decides for `ask` at `head` (checked out at `checkout`, commit
/// `head_sha`): the destroy's targets, planned against the head itself, or its refusal.
pub fn discovered(head: &Scan, checkout: &Path, ask: &DestroyAsk, head_sha: &str) -> Discovered {
    match destroy_scope(head, ask) {
        Err(refusal) => Discovered::Refused(refusal.into()),
        Ok(units) => {
            let targets = destroy_targets(&head.discovery, &head.graph, checkout, &units);
            Discovered::Targets {
                sources: crate::comment::sources_of(
                    &head.discovery,
                    targets.iter().map(|t| &t.path),
                ),
                targets,
                unresolved: head.unresolved(),
                merge_base: head_sha.to_string(),
                changed_files: Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RepoConfig;
    use crate::scan::scan_with;

    fn head(extra: &str) -> Scan {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live");
        let text = std::fs::read_to_string(dir.join(".cascade.yaml")).unwrap() + extra;
        scan_with(&dir, &dir, RepoConfig::parse(&text).unwrap(), &[])
    }

    fn ask(globs: &[&str]) -> DestroyAsk {
        DestroyAsk {
            globs: globs
                .iter()
                .map(
                    |g| match crate::command::parse_comment(&format!("/destroy {g}")).remove(0) {
                        crate::command::Parsed::Command(crate::command::Command::Destroy {
                            mut units,
                        }) => units.remove(0),
                        other => panic!("{other:?}"),
                    },
                )
                .collect(),
            branch: "main".into(),
        }
    }

    fn paths(units: &BTreeSet<UnitPath>) -> Vec<&str> {
        units.iter().map(|u| u.as_str()).collect()
    }

    #[test]
    fn a_destroy_takes_the_matched_units_when_it_names_every_dependent() {
        let head = head("");
        let units = destroy_scope(&head, &ask(&["dev/dns"])).unwrap();
        assert_eq!(paths(&units), ["dev/dns"]);
        // prod/monitoring depends on dev/monitoring: named, the destroy takes it too.
        let units = destroy_scope(&head, &ask(&["dev/**", "prod/monitoring"])).unwrap();
        assert!(units.len() > 2 && units.iter().any(|u| u.as_str() == "prod/monitoring"));
    }

    #[test]
    fn a_dependent_left_out_is_named_with_what_it_depends_on() {
        let head = head("");
        match destroy_scope(&head, &ask(&["dev/app"])) {
            Err(DestroyRefusal::DependentsLeftOut { globs, dependents }) => {
                assert_eq!(globs, ["dev/app"]);
                assert!(
                    dependents
                        .iter()
                        .any(|(d, on)| d.as_str() == "dev/dns" && on.as_str() == "dev/app"),
                    "{dependents:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_glob_matching_nothing_and_a_protected_unit_are_refused() {
        let head = head("prevent_destroy:\n  - prod/**\n");
        match destroy_scope(&head, &ask(&["dev/dns", "stage/*"])) {
            Err(DestroyRefusal::NoUnitMatched { globs }) => assert_eq!(globs, ["stage/*"]),
            other => panic!("{other:?}"),
        }
        // prod/dns depends on global/dns: protected as a dependent, before it is named.
        match destroy_scope(&head, &ask(&["global/dns"])) {
            Err(DestroyRefusal::Protected { units, .. }) => {
                let named: Vec<&str> = units.iter().map(|(u, _)| u.as_str()).collect();
                assert!(named.contains(&"prod/dns"), "{named:?}");
                assert!(units.iter().all(|(_, why)| why.glob == "prod/**"));
            }
            other => panic!("{other:?}"),
        }
    }
}
