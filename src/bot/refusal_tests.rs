//! Every refusal, said whole on GitHub and on GitLab: one snapshot per sample and forge
//! (`snapshots/cascade__bot__refusal__tests__<sample>__<forge>.snap`). The sample list is
//! also a match over [`Refusal`]'s variants, so a new variant does not compile until it
//! has a sample here.

use super::*;
use crate::forge::Spelling;

fn id(s: &str) -> PlanId {
    PlanId::parse(s).expect("a valid plan id")
}

fn unit(path: &str) -> UnitPath {
    UnitPath::new(path)
}

/// `samples!{ name => Variant: value, ... }` lists the samples and checks, at compile
/// time, that every variant of [`Refusal`] has one.
macro_rules! samples {
    ($($name:literal => $variant:ident: $value:expr),* $(,)?) => {
        fn samples() -> Vec<(&'static str, Refusal)> {
            vec![$(($name, $value)),*]
        }

        /// Not called: it compiles only while every variant is listed above.
        #[allow(dead_code, unreachable_patterns)]
        fn every_variant_has_a_sample(refusal: &Refusal) {
            match refusal {
                $(Refusal::$variant { .. } => {})*
            }
        }
    };
}

samples! {
    "no_write_permission" => NoWritePermission: Refusal::NoWritePermission {
        login: "mallory".into(),
        command: "/plan live/@team".into(),
        repo: RepoKey::from_stored("acme/infra"),
    },
    "not_permitted" => NotPermitted: Refusal::NotPermitted {
        login: "bob".into(),
        command: "/apply 3f9a2c1b7d4e".into(),
        users: vec!["alice".into(), "carol".into()],
        teams: vec!["acme/platform".into()],
        memberships_unreadable: false,
    },
    "not_permitted_memberships_unreadable" => NotPermitted: Refusal::NotPermitted {
        login: "bob".into(),
        command: "/unlock".into(),
        users: vec![],
        teams: vec!["acme/platform".into(), "acme/sre".into()],
        memberships_unreadable: true,
    },
    "rules_invalid" => RulesInvalid: Refusal::RulesInvalid {
        branch: "main".into(),
        problem: "line 3: unknown field `aply_requirements`".into(),
        command: "/apply 3f9a2c1b7d4e".into(),
    },
    "no_approval" => NoApproval: Refusal::NoApproval {
        id: id("3f9a2c1b7d4e"),
        author: "alice".into(),
    },
    "approvals_uncounted" => ApprovalsUncounted: Refusal::ApprovalsUncounted {
        id: id("3f9a2c1b7d4e"),
        repo: "acme/infra".into(),
        head: "89abcdef0123456789abcdef0123456789abcdef".into(),
        uncounted: Uncounted {
            stale: vec![("bob".into(), "0123456789abcdef0123456789abcdef01234567".into())],
            unpinned: vec!["carol".into()],
            contributed: vec![
                ("dave".into(), Contribution::Pushed),
                ("erin".into(), Contribution::Committed("fedcba9876543210fedcba9876543210fedcba98".into())),
            ],
            without_write: vec!["frank".into(), "grace".into()],
        },
    },
    "commits_unread" => CommitsUnread: Refusal::CommitsUnread {
        id: id("3f9a2c1b7d4e"),
        error: "HTTP 502 from the forge".into(),
    },
    "forge_approvals_missing_one" => ForgeApprovalsMissing: Refusal::ForgeApprovalsMissing {
        id: id("3f9a2c1b7d4e"),
        missing: 1,
    },
    "forge_approvals_missing_two" => ForgeApprovalsMissing: Refusal::ForgeApprovalsMissing {
        id: id("3f9a2c1b7d4e"),
        missing: 2,
    },
    "merge_blocked" => MergeBlocked: Refusal::MergeBlocked {
        id: id("3f9a2c1b7d4e"),
        why: "required checks have not passed".into(),
    },
    "not_mergeable" => NotMergeable: Refusal::NotMergeable {
        id: id("3f9a2c1b7d4e"),
        state: "dirty".into(),
    },
    "fork_not_applied" => ForkNotApplied: Refusal::ForkNotApplied,
    "fork_not_planned" => ForkNotPlanned: Refusal::ForkNotPlanned,
    "no_plan_yet" => NoPlanYet: Refusal::NoPlanYet,
    "new_commits" => NewCommits: Refusal::NewCommits { id: id("3f9a2c1b7d4e") },
    "not_latest_plan" => NotLatestPlan: Refusal::NotLatestPlan {
        id: id("3f9a2c1b7d4e"),
        current: id("0b1c2d3e4f5a"),
    },
    "unknown_plan" => UnknownPlan: Refusal::UnknownPlan {
        id: id("deadbeef0000"),
        current: id("0b1c2d3e4f5a"),
    },
    "already_applied" => AlreadyApplied: Refusal::AlreadyApplied { id: id("3f9a2c1b7d4e") },
    "no_current_plan" => NoCurrentPlan: Refusal::NoCurrentPlan { id: id("3f9a2c1b7d4e") },
    "plan_expired" => PlanExpired: Refusal::PlanExpired {
        id: id("3f9a2c1b7d4e"),
        age: std::time::Duration::from_secs(8 * 24 * 3600 + 3 * 3600 + 59),
        ttl: PlanTtl::DEFAULT,
    },
    "no_unit_matched" => NoUnitMatched: Refusal::NoUnitMatched {
        id: id("3f9a2c1b7d4e"),
        globs: vec!["live/stage/**".into(), "`x`@team".into()],
    },
    "plan_no_unit_matched" => PlanNoUnitMatched: Refusal::PlanNoUnitMatched {
        globs: vec!["live/stage/**".into()],
    },
    "dependencies_left_out" => DependenciesLeftOut: Refusal::DependenciesLeftOut {
        id: id("3f9a2c1b7d4e"),
        missing: vec![unit("global/dns"), unit("live/`x`")],
        instead: "/apply 3f9a2c1b7d4e dev/dns global/dns".into(),
    },
    "subset_on_drift_issue" => SubsetOnDriftIssue: Refusal::SubsetOnDriftIssue,
    "apply_running" => ApplyRunning: Refusal::ApplyRunning,
    "units_locked" => UnitsLocked: Refusal::UnitsLocked {
        locks: vec![(unit("live/prod/app"), 7), (unit("live/prod/dns"), 12)],
    },
    "engine_refused" => EngineRefused: Refusal::EngineRefused(ApplyError::Busy {
        id: id("3f9a2c1b7d4e"),
        pid: 4242,
        host: "cascade-0".into(),
    }),
    "base_not_planned" => BaseNotPlanned: Refusal::BaseNotPlanned(BaseRule {
        default: "main".into(),
        branches: vec!["release/*".into(), "staging".into()],
        base: "feature/x".into(),
    }),
    "base_not_applied" => BaseNotApplied: Refusal::BaseNotApplied(BaseRule {
        default: "main".into(),
        branches: vec![],
        base: "bob-base".into(),
    }),
    "no_sandbox" => NoSandbox: Refusal::NoSandbox {
        why: "Landlock is not enabled in this kernel".into(),
    },
    "not_served" => NotServed: Refusal::NotServed { owner: "acme-evil".into() },
    "reply_limit" => ReplyLimit: Refusal::ReplyLimit {
        replies: 10,
        window_minutes: 10,
        minutes: 7,
    },
    "drift_units_locked_one" => DriftUnitsLocked: Refusal::DriftUnitsLocked {
        locks: vec![(unit("global/dns"), 3)],
    },
    "drift_units_locked_two" => DriftUnitsLocked: Refusal::DriftUnitsLocked {
        locks: vec![(unit("global/dns"), 3), (unit("live/prod/app"), 4)],
    },
    "drift_apply_refused" => DriftApplyRefused: Refusal::DriftApplyRefused(ApplyError::Consumed {
        id: id("3f9a2c1b7d4e"),
    }),
    "drift_rules_invalid" => DriftRulesInvalid: Refusal::DriftRulesInvalid {
        branch: "main".into(),
        problem: "`.cascade.yaml` line 2: drift.schedule: not a schedule\n".into(),
    },
    "drift_off" => DriftOff: Refusal::DriftOff,
    "unlock_on_drift_issue" => UnlockOnDriftIssue: Refusal::UnlockOnDriftIssue,
    "policies_blocked" => Policies: Refusal::Policies(PolicyRefusal::Blocked {
        id: id("3f9a2c1b7d4e"),
        blocking: vec![
            crate::bot::policies::Blocking {
                set: "prod-guard".into(),
                units: vec![None, Some("live/prod/db".into()), Some("live/prod/@team`x".into())],
                rules: vec!["data.main.deny".into(), "evaluation error".into()],
                owners: Some(crate::config::ApplyPermission {
                    users: vec!["carol".into()],
                    teams: vec![crate::config::TeamName { org: "acme".into(), slug: "security".into() }],
                }),
            },
            crate::bot::policies::Blocking {
                set: "old-set".into(),
                units: vec![Some("live/dev/app".into())],
                rules: vec!["data.main.violation".into()],
                owners: None,
            },
        ],
    }),
    "policies_not_owner" => Policies: Refusal::Policies(PolicyRefusal::NotOwner {
        login: "bob".into(),
        id: id("3f9a2c1b7d4e"),
        sets: vec![
            ("prod-guard".into(), Some(crate::config::ApplyPermission { users: vec!["carol".into()], teams: vec![] })),
            ("tags".into(), Some(crate::config::ApplyPermission::default())),
        ],
        memberships_unreadable: true,
    }),
    "policies_own_change_author" => Policies: Refusal::Policies(PolicyRefusal::OwnChange {
        login: "alice".into(),
        how: None,
    }),
    "policies_own_change_pushed" => Policies: Refusal::Policies(PolicyRefusal::OwnChange {
        login: "dave".into(),
        how: Some(Contribution::Pushed),
    }),
    "policies_nothing_to_approve" => Policies: Refusal::Policies(PolicyRefusal::NothingToApprove {
        id: id("3f9a2c1b7d4e"),
    }),
    "applies_after_merge" => AfterMerge: Refusal::AfterMerge(AfterMergeRefusal::AppliesAfterMerge {
        id: id("3f9a2c1b7d4e"),
        units: vec![unit("live/prod/app"), unit("live/`x`@team")],
        others: Some("/apply 3f9a2c1b7d4e live/dev/app".into()),
    }),
    "applies_after_merge_only" => AfterMerge: Refusal::AfterMerge(AfterMergeRefusal::AppliesAfterMerge {
        id: id("3f9a2c1b7d4e"),
        units: vec![unit("live/prod/app")],
        others: None,
    }),
    "merged_unapproved" => AfterMerge: Refusal::AfterMerge(AfterMergeRefusal::MergedUnapproved {
        id: id("3f9a2c1b7d4e"),
        why: "Not applied: plan `3f9a2c1b7d4e` needs an approving review.\nAsk @team.".into(),
    }),
    "policies_on_drift_issue" => Policies: Refusal::Policies(PolicyRefusal::OnDriftIssue),
    "policies_sets_unusable" => Policies: Refusal::Policies(PolicyRefusal::SetsUnusable {
        branch: "main".into(),
        problem: "cannot compile policy set `guard`: policies/guard/deny.rego:3: unexpected token".into(),
        applying: None,
    }),
    "policies_sets_unusable_at_apply" => Policies: Refusal::Policies(PolicyRefusal::SetsUnusable {
        branch: "main".into(),
        problem: "cannot read policy set `guard`: policies/guard/x.rego is a symlink; cascade follows none".into(),
        applying: Some(id("3f9a2c1b7d4e")),
    }),
    "state_off" => State: Refusal::State(StateRefusal::Off {
        command: crate::config::OptInCommand::StateRm,
        branch: "main".into(),
        listed: vec![],
    }),
    "state_off_import_besides_state_rm" => State: Refusal::State(StateRefusal::Off {
        command: crate::config::OptInCommand::Import,
        branch: "main".into(),
        listed: vec![crate::config::OptInCommand::StateRm],
    }),
    "state_fork" => State: Refusal::State(StateRefusal::Fork),
    "state_unknown_unit" => State: Refusal::State(StateRefusal::UnknownUnit {
        command: "/state rm live/@team`x terraform_data.x".into(),
        unit: unit("live/@team`x"),
    }),
    "state_locked" => State: Refusal::State(StateRefusal::Locked {
        unit: unit("live/dev/vpc"),
        holder: 12,
    }),
    "state_on_drift_issue" => State: Refusal::State(StateRefusal::OnDriftIssue),
    "destroy_no_unit_matched" => Destroy: Refusal::Destroy(DestroyRefusal::NoUnitMatched {
        globs: vec!["live/stage/**".into(), "`x`@team".into()],
    }),
    "destroy_dependents_left_out" => Destroy: Refusal::Destroy(DestroyRefusal::DependentsLeftOut {
        globs: vec!["dev/app".into(), "global/*".into()],
        dependents: vec![
            (unit("dev/dns"), unit("dev/app")),
            (unit("prod/`x`"), unit("global/dns")),
        ],
    }),
    "destroy_protected" => Destroy: Refusal::Destroy(DestroyRefusal::Protected {
        branch: "main".into(),
        units: vec![(
            unit("prod/dns"),
            crate::config::Protection { glob: "prod/**".into(), line: 12 },
        )],
        applying: None,
    }),
    "destroy_protected_at_apply" => Destroy: Refusal::Destroy(DestroyRefusal::Protected {
        branch: "main".into(),
        units: vec![
            (unit("prod/dns"), crate::config::Protection { glob: "prod/**".into(), line: 12 }),
            (unit("global/dns"), crate::config::Protection { glob: "global/dns".into(), line: 13 }),
        ],
        applying: Some(id("3f9a2c1b7d4e")),
    }),
    "destroy_on_drift_issue" => Destroy: Refusal::Destroy(DestroyRefusal::OnDriftIssue),
}

#[test]
fn every_refusal_reads_whole_on_both_forges() {
    for (name, refusal) in samples() {
        for (forge, spelling) in [("github", &Spelling::GITHUB), ("gitlab", &Spelling::GITLAB)] {
            insta::assert_snapshot!(format!("{name}__{forge}"), refusal.message(spelling));
        }
    }
}

#[test]
fn sample_names_are_distinct() {
    let names: std::collections::BTreeSet<&str> = samples().iter().map(|(name, _)| *name).collect();
    assert_eq!(names.len(), samples().len());
}

#[test]
fn a_plan_id_that_is_not_current_is_said_by_what_is_current() {
    let not = |current: Option<&str>, was| NotCurrent {
        id: id("3f9a2c1b7d4e"),
        was,
        current: current.map(id),
    };
    assert!(matches!(
        Refusal::from(not(Some("0b1c2d3e4f5a"), Was::Consumed)),
        Refusal::NotLatestPlan { current, .. } if current.as_str() == "0b1c2d3e4f5a"
    ));
    assert!(matches!(
        Refusal::from(not(None, Was::Consumed)),
        Refusal::AlreadyApplied { .. }
    ));
    assert!(matches!(
        Refusal::from(not(None, Was::Superseded)),
        Refusal::NoCurrentPlan { .. }
    ));
    assert!(matches!(
        Refusal::from(not(None, Was::Unknown)),
        Refusal::NoCurrentPlan { .. }
    ));
    assert!(matches!(
        Refusal::from(not(Some("0b1c2d3e4f5a"), Was::Unknown)),
        Refusal::UnknownPlan { current, .. } if current.as_str() == "0b1c2d3e4f5a"
    ));
}

#[test]
fn unit_paths_the_engine_names_are_inert_in_a_reply() {
    for refusal in [
        Refusal::EngineRefused(ApplyError::Incomplete {
            id: id("3f9a2c1b7d4e"),
            units: "dev/@acme/platform-team, live/[x](https://evil.example)".into(),
        }),
        Refusal::DriftApplyRefused(ApplyError::Incomplete {
            id: id("3f9a2c1b7d4e"),
            units: "dev/@acme/platform-team".into(),
        }),
    ] {
        let said = refusal.message(&Spelling::GITHUB);
        assert!(!said.contains("@acme"), "{said}");
        assert!(!said.contains("[x](https"), "{said}");
        assert!(said.contains("did not plan"), "{said}");
    }
}

#[test]
fn units_locked_by_several_pull_requests_are_said_to_be() {
    let locks = |prs: &[u64]| Refusal::DriftUnitsLocked {
        locks: prs
            .iter()
            .enumerate()
            .map(|(i, pr)| (UnitPath::new(format!("live/u{i}")), *pr))
            .collect(),
    };
    let one = locks(&[2, 2]).message(&Spelling::GITHUB);
    assert!(
        one.contains("are locked by an open pull request; apply once it is merged"),
        "{one}"
    );
    let two = locks(&[2, 3]).message(&Spelling::GITLAB);
    assert!(
        two.contains("are locked by open merge requests; apply once they are merged"),
        "{two}"
    );
}

#[test]
fn a_plan_the_engine_finds_expired_is_refused_as_the_bot_says_it_on_the_drift_issue_too() {
    let expired = || ApplyError::Expired {
        id: id("3f9a2c1b7d4e"),
        age: std::time::Duration::from_secs(3600),
        ttl: PlanTtl::new(std::time::Duration::from_secs(60)).unwrap(),
    };
    for said in [Refusal::EngineRefused, Refusal::DriftApplyRefused] {
        let refusal = Refusal::engine_refused(expired(), said);
        assert!(
            matches!(refusal, Refusal::PlanExpired { .. }),
            "{refusal:?}"
        );
        let text = refusal.message(&Spelling::GITLAB);
        assert!(
            text.contains("is 1 hour old, older than `plan_ttl` (1 minute)"),
            "{text}"
        );
        assert!(text.contains("comment `cascade plan`"), "{text}");
    }
    let busy = ApplyError::Busy {
        id: id("3f9a2c1b7d4e"),
        pid: 1,
        host: "h".into(),
    };
    let refusal = Refusal::engine_refused(busy, Refusal::DriftApplyRefused);
    assert!(
        matches!(refusal, Refusal::DriftApplyRefused(ApplyError::Busy { .. })),
        "{refusal:?}"
    );
}
