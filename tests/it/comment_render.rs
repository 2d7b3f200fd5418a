//! The PR comments as users see them: insta snapshots of every built-in template on realistic
//! plans and apply results, the splitting of a huge plan into parts that GitHub accepts, and
//! the errors a broken repo template override gives.

use cascade::comment::{
    APPLY_MARKER, ApplyOutcome, ApplyStatus, ApplyUnitView, ApplyView, CommentError, CommentKind,
    Comments, PLAN_MARKER, PlanView, Problem, UnitView, WaveView, parse_marker,
};
use cascade::forge::Spelling;
use cascade::forge::github::COMMENT_LIMIT;
use cascade::plan::{Counts, OutputChange, PlanId, ResourceChange};

// ---------------------------------------------------------------- building views

/// A resource change; a replacement is forced by `triggers_replace`, as `terraform_data`'s.
fn rc(address: &str, actions: &[&str]) -> ResourceChange {
    let forced_by = if actions.first() == Some(&"replace") {
        vec!["triggers_replace".to_string()]
    } else {
        Vec::new()
    };
    ResourceChange {
        address: address.into(),
        actions: actions.iter().map(|a| a.to_string()).collect(),
        forced_by,
    }
}

fn output(name: &str, action: &str) -> OutputChange {
    OutputChange {
        name: name.into(),
        action: action.into(),
    }
}

/// Counts as the plan module would make them from the action labels.
fn counts_of(resources: &[ResourceChange]) -> Counts {
    let mut c = Counts::default();
    for r in resources {
        for a in &r.actions {
            match a.as_str() {
                "create" => c.add += 1,
                "update" => c.change += 1,
                "delete" => c.destroy += 1,
                "replace" => c.replace += 1,
                "read" => c.read += 1,
                "forget" => c.forget += 1,
                "import" => c.import += 1,
                "move" => c.moved += 1,
                other => panic!("unknown action {other}"),
            }
        }
    }
    c
}

fn unit(path: &str, fingerprint: &str, resources: Vec<ResourceChange>) -> UnitView {
    UnitView {
        path: path.into(),
        counts: counts_of(&resources),
        fingerprint: fingerprint.into(),
        no_changes: resources.is_empty(),
        resources,
        outputs: Vec::new(),
        provisional: false,
        rendered: None,
        retried: 0,
    }
}

fn problem(unit: &str, reason: &str) -> Problem {
    Problem {
        unit: unit.into(),
        reason: reason.into(),
        retried: 0,
    }
}

fn add(a: Counts, b: Counts) -> Counts {
    Counts {
        add: a.add + b.add,
        change: a.change + b.change,
        destroy: a.destroy + b.destroy,
        replace: a.replace + b.replace,
        import: a.import + b.import,
        moved: a.moved + b.moved,
        forget: a.forget + b.forget,
        read: a.read + b.read,
    }
}

fn plan_view(plan_id: &str, waves: Vec<WaveView>, destroys: Vec<UnitView>) -> PlanView {
    let totals = waves
        .iter()
        .flat_map(|w| w.units.iter())
        .chain(destroys.iter())
        .fold(Counts::default(), |acc, u| add(acc, u.counts));
    PlanView {
        merge_mode: Default::default(),
        plan_id: plan_id.into(),
        needs_approval: totals != Counts::default(),
        head: "a1b2c3d".into(),
        base: "9f8e7d6".into(),
        totals,
        waves,
        destroys,
        failed: Vec::new(),
        skipped: Vec::new(),
        unresolved: Vec::new(),
        locked: Vec::new(),
        ordered_last: Vec::new(),
        sources: Vec::new(),
        rounds: 1,
        steps: Vec::new(),
        policies: Vec::new(),
        policy_edits: Vec::new(),
        destroy_command: false,
    }
}

/// Six units in three waves, one destroyed unit, and one unit of each kind of problem.
fn realistic_plan() -> PlanView {
    let mut vpc = unit(
        "live/prod/network/vpc",
        "5d41402abc4b",
        vec![
            rc("aws_subnet.private[\"eu-west-1c\"]", &["create"]),
            rc(
                "aws_route_table_association.private[\"eu-west-1c\"]",
                &["create"],
            ),
            rc("aws_vpc.main", &["update"]),
        ],
    );
    vpc.outputs = vec![output("private_subnet_ids", "update")];
    let iam = unit(
        "live/prod/iam/roles",
        "7b52009b64fd",
        vec![
            rc("aws_iam_role.deployer", &["update"]),
            rc("aws_iam_role.ci", &["update", "import"]),
        ],
    );
    let rds = unit(
        "live/prod/data/rds",
        "e4da3b7fbbce",
        vec![
            rc("aws_db_instance.main", &["replace"]),
            rc("aws_db_parameter_group.main", &["update"]),
            rc(
                "module.monitoring.aws_cloudwatch_metric_alarm.cpu",
                &["move"],
            ),
        ],
    );
    let cluster = unit(
        "live/prod/app/ecs-cluster",
        "1679091c5a88",
        vec![
            rc("aws_ecs_cluster.main", &["create"]),
            rc("aws_ecs_capacity_provider.spot", &["create"]),
            rc("aws_cloudwatch_log_group.ecs", &["create"]),
        ],
    );
    let mut api = unit(
        "live/prod/app/api",
        "8f14e45fceea",
        vec![
            rc("data.aws_subnets.private", &["read"]),
            rc("aws_ecs_service.api", &["update"]),
            rc("aws_security_group_rule.api_ingress", &["update"]),
        ],
    );
    api.provisional = true;
    let worker = unit("live/prod/app/worker", "c9f0f895fb98", vec![]);
    let mut legacy = unit(
        "live/prod/legacy/queue",
        "45c48cce2e2d",
        vec![
            rc("aws_sqs_queue.jobs", &["delete"]),
            rc("aws_sqs_queue.jobs_dlq", &["delete"]),
            rc("aws_sqs_queue_policy.jobs", &["delete"]),
        ],
    );
    legacy.outputs = vec![output("queue_url", "delete"), output("queue_arn", "delete")];
    let mut view = plan_view(
        "3f9a2c1b7d4e",
        vec![
            WaveView {
                number: 1,
                units: vec![iam, vpc],
            },
            WaveView {
                number: 2,
                units: vec![cluster, rds],
            },
            WaveView {
                number: 3,
                units: vec![api, worker],
            },
        ],
        vec![legacy],
    );
    view.failed = vec![problem(
        "live/prod/app/frontend",
        "Error: creating CloudFront Distribution: AccessDenied: User: arn:aws:sts::123456789012:assumed-role/cascade-plan/i-0abc is not authorized\n\n  with aws_cloudfront_distribution.site,\n  on cdn.tf line 12, in resource \"aws_cloudfront_distribution\" \"site\":\n  12: resource \"aws_cloudfront_distribution\" \"site\" {",
    )];
    view.skipped = vec![
        problem(
            "live/prod/app/cdn-logs",
            "live/prod/app/frontend failed to plan",
        ),
        problem(
            "live/prod/dns/records",
            "live/prod/app/frontend failed to plan",
        ),
    ];
    view.unresolved = vec![problem(
        "live/prod/tools/bastion",
        "terragrunt.hcl:7:14: the path of dependency \"vpc\" is computed by run_cmd(), which cascade does not execute",
    )];
    view.locked = vec![problem(
        "live/prod/shared/kms",
        "locked by pull request #482 (@alice) since 2026-03-02 14:10 UTC",
    )];
    view
}

fn no_changes_plan() -> PlanView {
    plan_view(
        PlanId::NO_CHANGES,
        vec![
            WaveView {
                number: 1,
                units: vec![unit("live/dev/network/vpc", "e3b0c44298fc", vec![])],
            },
            WaveView {
                number: 2,
                units: vec![unit("live/dev/app/api", "e3b0c44298fc", vec![])],
            },
        ],
        vec![],
    )
}

/// A unit's part in an apply; an applied one added a resource in 3.4 s and printed so.
fn apply_unit(path: &str, status: ApplyStatus, detail: &str) -> ApplyUnitView {
    let applied = status == ApplyStatus::Applied;
    ApplyUnitView {
        path: path.into(),
        status,
        detail: detail.into(),
        destroy: false,
        applied: applied.then(|| {
            (
                Counts {
                    add: 1,
                    ..Counts::default()
                },
                0,
            )
        }),
        duration: applied.then(|| std::time::Duration::from_millis(3400)),
        output: if applied {
            vec![
                "terraform_data.x: Creating...".into(),
                "terraform_data.x: Creation complete after 0s [id=5e1f]".into(),
                String::new(),
                "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.".into(),
            ]
        } else {
            Vec::new()
        },
        since_approval: None,
    }
}

fn render_plan(view: &PlanView) -> String {
    let parts = Comments::new().plan_comment(view, COMMENT_LIMIT).unwrap();
    assert_eq!(parts.len(), 1);
    parts.into_iter().next().unwrap()
}

fn render_apply(view: &ApplyView) -> String {
    let parts = Comments::new().apply_comment(view, COMMENT_LIMIT).unwrap();
    assert_eq!(parts.len(), 1);
    parts.into_iter().next().unwrap()
}

// ---------------------------------------------------------------- a structure checker

/// An independent check that a body leaves no code fence or `<details>` open: fences by
/// CommonMark's rules (same character, at least as long), `<details>` outside fences.
fn assert_balanced(body: &str) {
    let mut fence: Option<(char, usize)> = None;
    let mut depth: i64 = 0;
    for (n, line) in body.lines().enumerate() {
        let t = line.trim();
        match fence {
            Some((ch, len)) => {
                if t.len() >= len && t.chars().all(|c| c == ch) {
                    fence = None;
                }
            }
            None => {
                let ch = t.chars().next().unwrap_or(' ');
                let run = t.chars().take_while(|&c| c == ch).count();
                if (ch == '`' || ch == '~') && run >= 3 && !(ch == '`' && t[run..].contains('`')) {
                    fence = Some((ch, run));
                    continue;
                }
                depth += line.matches("<details>").count() as i64;
                depth -= line.matches("</details>").count() as i64;
                assert!(depth >= 0, "</details> without <details> at line {}", n + 1);
            }
        }
    }
    assert!(fence.is_none(), "a code fence is left open");
    assert_eq!(depth, 0, "a <details> block is left open");
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

// ---------------------------------------------------------------- snapshots

#[test]
fn a_realistic_plan() {
    let body = render_plan(&realistic_plan());
    assert_balanced(&body);
    insta::assert_snapshot!("comment_plan_realistic", body);
}

#[test]
fn plan_without_changes() {
    let body = render_plan(&no_changes_plan());
    assert!(body.contains("No changes — nothing to apply"));
    assert!(!body.contains("/apply"));
    insta::assert_snapshot!("comment_plan_no_changes", body);
}

#[test]
fn a_destroy_of_units_with_nothing_in_their_state_is_not_loud() {
    let mut view = plan_view(
        PlanId::NO_CHANGES,
        vec![],
        vec![unit("live/dev/dns", "e3b0c44298fc", vec![])],
    );
    view.needs_approval = false;
    view.destroy_command = true;
    let body = render_plan(&view);
    assert!(
        body.contains("### cascade plan `000000000000`: nothing to destroy"),
        "{body}"
    );
    assert!(!body.contains("DESTROY"), "{body}");
    assert!(
        body.contains("hold no resources, so there is nothing to destroy"),
        "{body}"
    );
    view.needs_approval = true;
    assert!(render_plan(&view).contains("🔥 cascade plans to DESTROY 1 unit"));
}

#[test]
fn a_plan_whose_units_are_all_locked_or_failed_never_says_no_changes() {
    let mut locked = plan_view(PlanId::NO_CHANGES, vec![], vec![]);
    locked.locked = vec![problem(
        "live/dev/network/vpc",
        "locked by #12: merge or close it, or comment `/unlock` there",
    )];
    let body = render_plan(&locked);
    assert!(!body.contains("No changes"), "{body}");
    assert!(
        body.contains("plans them by itself once they are released"),
        "{body}"
    );
    assert!(!body.contains("/apply 0"), "{body}");
    let mut failed = plan_view(PlanId::NO_CHANGES, vec![], vec![]);
    failed.failed = vec![problem("live/dev/network/vpc", "Error: boom")];
    let body = render_plan(&failed);
    assert!(!body.contains("No changes"), "{body}");
    assert!(body.contains("failed to plan"), "{body}");
}

#[test]
fn apply_that_fully_applied() {
    let view = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::Applied,
        units: vec![
            apply_unit("live/prod/iam/roles", ApplyStatus::Applied, ""),
            apply_unit("live/prod/network/vpc", ApplyStatus::Applied, ""),
            apply_unit("live/prod/app/ecs-cluster", ApplyStatus::Applied, ""),
            apply_unit("live/prod/data/rds", ApplyStatus::Applied, ""),
            apply_unit("live/prod/app/api", ApplyStatus::Applied, ""),
            apply_unit("live/prod/app/worker", ApplyStatus::Unchanged, ""),
            apply_unit("live/prod/legacy/queue", ApplyStatus::Applied, ""),
        ],
        new_plan: None,
        steps: Vec::new(),
    };
    let body = render_apply(&view);
    assert!(body.starts_with(APPLY_MARKER));
    insta::assert_snapshot!("comment_apply_applied", body);
}

#[test]
fn apply_that_partly_failed() {
    let view = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::Partial,
        units: vec![
            apply_unit("live/prod/iam/roles", ApplyStatus::Applied, ""),
            apply_unit("live/prod/network/vpc", ApplyStatus::Applied, ""),
            apply_unit("live/prod/app/ecs-cluster", ApplyStatus::Applied, ""),
            apply_unit(
                "live/prod/data/rds",
                ApplyStatus::Failed,
                "Error: creating RDS DB Instance (prod-main): InvalidParameterCombination: \
                 RDS does not support creating a DB instance with the following combination: \
                 DBInstanceClass=db.m7g.large, Engine=postgres, EngineVersion=12.4\n\n  \
                 with aws_db_instance.main,\n  on main.tf line 40, in resource \"aws_db_instance\" \"main\":\n  \
                 40: resource \"aws_db_instance\" \"main\" {",
            ),
            apply_unit(
                "live/prod/app/api",
                ApplyStatus::Skipped,
                "live/prod/data/rds failed",
            ),
            apply_unit(
                "live/prod/app/worker",
                ApplyStatus::Skipped,
                "live/prod/data/rds failed",
            ),
            apply_unit("live/prod/legacy/queue", ApplyStatus::Applied, ""),
        ],
        new_plan: None,
        steps: Vec::new(),
    };
    let body = render_apply(&view);
    assert_balanced(&body);
    insta::assert_snapshot!("comment_apply_partial", body);
}

#[test]
fn apply_stopped_because_the_plan_changed() {
    let mut api = unit(
        "live/prod/app/api",
        "0cc175b9c0f1",
        vec![
            rc("aws_ecs_service.api", &["update"]),
            rc("aws_security_group_rule.api_ingress", &["replace"]),
        ],
    );
    api.outputs = vec![output("service_arn", "update")];
    let worker = unit("live/prod/app/worker", "c9f0f895fb98", vec![]);
    let mut new_plan = plan_view(
        "b7e23ec29af2",
        vec![WaveView {
            number: 1,
            units: vec![api, worker],
        }],
        vec![],
    );
    new_plan.head = "a1b2c3d".into();
    let view = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::PlanChanged,
        units: vec![
            apply_unit("live/prod/iam/roles", ApplyStatus::Applied, ""),
            apply_unit("live/prod/network/vpc", ApplyStatus::Applied, ""),
            apply_unit(
                "live/prod/app/api",
                ApplyStatus::ChangedSinceApproval,
                "approved 8f14e45fceea, now 0cc175b9c0f1",
            ),
            apply_unit(
                "live/prod/app/worker",
                ApplyStatus::Skipped,
                "live/prod/app/api's plan changed since approval",
            ),
        ],
        new_plan: Some(new_plan),
        steps: Vec::new(),
    };
    let body = render_apply(&view);
    assert_balanced(&body);
    assert!(body.contains("/apply b7e23ec29af2"));
    assert!(!body.contains("/apply 3f9a2c1b7d4e"));
    insta::assert_snapshot!("comment_apply_plan_changed", body);
}

// ---------------------------------------------------------------- splitting

/// 400 units in 8 waves, 50 resources each, and a destroyed unit with a resource list far
/// longer than one comment.
fn huge_plan() -> PlanView {
    let actions: [&[&str]; 5] = [
        &["create"],
        &["update"],
        &["replace"],
        &["update", "import"],
        &["delete"],
    ];
    let unit_at = |w: usize, i: usize| {
        let resources = (0..50)
            .map(|r| {
                rc(
                    &format!("module.service.aws_ecs_task_definition.task[\"container-{r:02}\"]"),
                    actions[r % actions.len()],
                )
            })
            .collect();
        unit(
            &format!("live/prod/region-{w}/service-{i:03}"),
            "0123456789ab",
            resources,
        )
    };
    let waves = (1..=8)
        .map(|w| WaveView {
            number: w,
            units: (0..50).map(|i| unit_at(w, i)).collect(),
        })
        .collect();
    let giant = unit(
        "live/prod/legacy/monolith",
        "ba9876543210",
        (0..3000)
            .map(|r| {
                rc(
                    &format!("aws_route53_record.legacy[\"host-{r:04}.example.com\"]"),
                    &["delete"],
                )
            })
            .collect(),
    );
    plan_view("3f9a2c1b7d4e", waves, vec![giant])
}

#[test]
fn a_huge_plan_is_split_into_parts_that_github_accepts() {
    let view = huge_plan();
    // As many parts as it takes (what `cascade plan` prints); the bot's cap is tested below.
    let parts = Comments::new()
        .plan_comment_within(&view, COMMENT_LIMIT, usize::MAX)
        .unwrap();
    let n = parts.len();
    assert!(n > 10, "only {n} parts");
    for (i, part) in parts.iter().enumerate() {
        let k = i + 1;
        assert!(
            chars(part) <= COMMENT_LIMIT,
            "part {k} has {} chars",
            chars(part)
        );
        assert_balanced(part);
        let marker = parse_marker(part).unwrap_or_else(|| panic!("part {k} has no marker"));
        assert_eq!((marker.kind, marker.part), (CommentKind::Plan, k));
        if k == 1 {
            assert!(part.starts_with(&format!("{PLAN_MARKER}\n### cascade plan `3f9a2c1b7d4e`")));
        } else {
            assert_eq!(marker.parts, Some(n));
            let second = part.lines().nth(1).unwrap();
            assert_eq!(second, format!("*(continued, part {k} of {n})*"));
        }
    }
    let all = parts.join("\n");
    for wave in &view.waves {
        for u in &wave.units {
            // Its table row, with its wave, and its whole resource list.
            assert!(
                all.contains(&format!("| {} | `{}` |", wave.number, u.path)),
                "{} has no row",
                u.path
            );
            let summary = format!(
                "<details><summary><code>{}</code> — 50 resources</summary>",
                u.path
            );
            let start = all
                .find(&summary)
                .unwrap_or_else(|| panic!("{} has no list", u.path));
            let list = &all[start..start + all[start..].find("</details>").unwrap()];
            assert_eq!(
                list.lines()
                    .filter(|l| l.contains("aws_ecs_task_definition"))
                    .count(),
                50
            );
        }
    }
    // The one resource list longer than a comment is cut, says so, and is closed.
    let giant = &view.destroys[0].path;
    let start = all
        .find(&format!(
            "<details><summary><code>{giant}</code> — 3000 resources</summary>"
        ))
        .unwrap();
    let list = &all[start..start + all[start..].find("</details>").unwrap()];
    let kept = list
        .lines()
        .filter(|l| l.contains("aws_route53_record"))
        .count();
    assert!(kept > 500 && kept < 3000, "{kept} lines kept");
    assert!(list.contains(&format!(
        "… {} more lines (see the run log)\n```\n",
        3000 - kept
    )));
}

#[test]
fn past_the_cap_with_nothing_to_leave_out_the_last_part_says_what_is_not_shown() {
    // No unit has a rendered plan here (plans stored before cascade kept them): the
    // resource lists and tables alone need more than eleven comments.
    let view = huge_plan();
    let parts = Comments::new().plan_comment(&view, COMMENT_LIMIT).unwrap();
    assert_eq!(parts.len(), cascade::comment::MAX_COMMENTS);
    for (i, part) in parts.iter().enumerate() {
        assert!(chars(part) <= COMMENT_LIMIT, "part {} is too long", i + 1);
        assert_balanced(part);
        let marker = parse_marker(part).unwrap();
        assert_eq!(marker.part, i + 1);
        if i > 0 {
            assert_eq!(marker.parts, Some(cascade::comment::MAX_COMMENTS));
        }
    }
    let last = parts.last().unwrap();
    assert!(
        last.ends_with(
            "comments' worth of this is not shown: cascade posts at most 11 comments. \
             Run `cascade plan --format markdown` locally to see all of it."
        ),
        "{}",
        &last[last.len() - 300..]
    );
    assert!(!last.contains("Continued in the next comment"));
}

#[test]
fn a_plan_that_fits_is_not_split_and_a_small_limit_splits_it_cleanly() {
    let view = realistic_plan();
    let whole = Comments::new().plan_comment(&view, COMMENT_LIMIT).unwrap();
    assert_eq!(whole.len(), 1);
    let parts = Comments::new()
        .plan_comment_within(&view, 1200, usize::MAX)
        .unwrap();
    assert!(parts.len() > 2);
    for part in &parts {
        assert!(chars(part) <= 1200, "{part}");
        assert_balanced(part);
    }
    // Nothing is lost at this size: every line of the whole comment is in some part.
    let joined = parts.join("\n");
    for line in whole[0].lines().filter(|l| !l.trim().is_empty()) {
        assert!(joined.contains(line), "lost {line:?}");
    }
}

#[test]
fn an_apply_with_a_new_plan_splits_with_the_apply_marker() {
    let mut plan = huge_plan();
    plan.plan_id = "b7e23ec29af2".into();
    let view = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::PlanChanged,
        units: vec![apply_unit(
            "live/prod/a",
            ApplyStatus::ChangedSinceApproval,
            "",
        )],
        new_plan: Some(plan),
        steps: Vec::new(),
    };
    let parts = Comments::new().apply_comment(&view, COMMENT_LIMIT).unwrap();
    assert!(parts.len() > 1);
    for part in &parts {
        assert!(chars(part) <= COMMENT_LIMIT);
        assert_balanced(part);
        assert_eq!(parse_marker(part).unwrap().kind, CommentKind::Apply);
    }
}

// ---------------------------------------------------------------- overrides

#[test]
fn an_override_directory_replaces_only_the_templates_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.md.hbs"),
        "Plan {{plan_id}}: {{totals.add}} to add.\n",
    )
    .unwrap();
    let comments = Comments::with_overrides(dir.path()).unwrap();
    let plan = comments
        .plan_comment(&realistic_plan(), COMMENT_LIMIT)
        .unwrap();
    assert_eq!(
        plan,
        [format!("{PLAN_MARKER}\nPlan 3f9a2c1b7d4e: 5 to add.")]
    );
    let apply = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::Failed,
        units: vec![apply_unit("live/prod/a", ApplyStatus::Failed, "boom")],
        new_plan: None,
        steps: Vec::new(),
    };
    let body = &comments.apply_comment(&apply, COMMENT_LIMIT).unwrap()[0];
    assert!(body.contains("❌ failed — `boom`"), "{body}");
}

#[test]
fn a_missing_override_directory_means_the_built_in_templates() {
    let dir = tempfile::tempdir().unwrap();
    let comments = Comments::with_overrides(&dir.path().join("nope")).unwrap();
    let body = &comments
        .plan_comment(&no_changes_plan(), COMMENT_LIMIT)
        .unwrap()[0];
    assert!(body.contains("No changes"));
}

#[test]
fn a_broken_override_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("apply.md.hbs");
    std::fs::write(
        &file,
        "### Applied {{plan_id}}\n\n{{#each units}}\n- {{path}}\n{{/if}}\n",
    )
    .unwrap();
    let err = Comments::with_overrides(dir.path())
        .err()
        .expect("a parse error");
    let CommentError::Template { file: f, line, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(f, &file.display().to_string());
    assert_eq!(*line, Some(5));
    let shown = err
        .to_string()
        .replace(&dir.path().display().to_string(), "<dir>");
    insta::assert_snapshot!("comment_override_parse_error", shown);
}

#[test]
fn an_override_using_a_field_that_does_not_exist_fails_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.md.hbs"),
        "Plan {{plan_id}}\n\nby {{author}}\n",
    )
    .unwrap();
    let comments = Comments::with_overrides(dir.path()).unwrap();
    let err = comments
        .plan_comment(&realistic_plan(), COMMENT_LIMIT)
        .unwrap_err();
    let shown = err
        .to_string()
        .replace(&dir.path().display().to_string(), "<dir>");
    insta::assert_snapshot!("comment_override_render_error", shown);
}

#[cfg(unix)]
#[test]
fn an_override_that_is_a_symlink_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("plan.md.hbs")).unwrap();
    let err = Comments::with_overrides(dir.path()).err().expect("refused");
    assert!(matches!(err, CommentError::Read { .. }), "{err:?}");
    assert!(err.to_string().contains("not a regular file"));
}

// ---------------------------------------------------------------- GitLab's spelling

/// The built-in templates spelled for GitLab: commands as `cascade <command>` (GitLab takes
/// `/unlock` as its own quick action), "merge request" for "pull request". The snapshots
/// above are GitHub's, which the default spelling renders byte for byte.
fn gitlab_comments() -> Comments {
    Comments::new().spelled(&Spelling::GITLAB)
}

#[test]
fn a_realistic_plan_spelled_for_gitlab() {
    let parts = gitlab_comments()
        .plan_comment(&realistic_plan(), 1_000_000)
        .unwrap();
    assert_eq!(parts.len(), 1);
    let body = &parts[0];
    assert_balanced(body);
    assert!(body.contains("\ncascade apply "), "{body}");
    for github in [
        "`/plan`",
        "`/unlock`",
        "`/help`",
        "/apply",
        "this pull request",
    ] {
        assert!(!body.contains(github), "{github} in {body}");
    }
    insta::assert_snapshot!("comment_plan_realistic_gitlab", body);
}

#[test]
fn an_apply_result_spelled_for_gitlab() {
    let view = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::Partial,
        units: vec![
            apply_unit("live/prod/network/vpc", ApplyStatus::Applied, ""),
            apply_unit("live/prod/data/rds", ApplyStatus::Failed, "Error: boom"),
            apply_unit(
                "live/prod/app/api",
                ApplyStatus::Skipped,
                "live/prod/data/rds failed",
            ),
        ],
        new_plan: None,
        steps: Vec::new(),
    };
    let body = &gitlab_comments().apply_comment(&view, 1_000_000).unwrap()[0];
    assert!(body.contains("comment `cascade plan` to plan what is left"));
    insta::assert_snapshot!("comment_apply_partial_gitlab", body);
    let applied = ApplyView {
        outcome: ApplyOutcome::Applied,
        units: vec![apply_unit(
            "live/prod/network/vpc",
            ApplyStatus::Applied,
            "",
        )],
        ..view
    };
    let body = &gitlab_comments()
        .apply_comment(&applied, 1_000_000)
        .unwrap()[0];
    assert!(body.contains("This merge request can be merged."), "{body}");
}

// ---------------------------------------------------------------- logs in the check

/// On GitHub the check run carries the failed units' logs: each failed unit gets one line
/// that points there, and no block with the whole message. Everything else is as above.
#[test]
fn failed_units_point_to_the_check_where_it_shows_their_logs() {
    let mut view = realistic_plan();
    view.failed[0].reason = "`terraform plan` failed (exit code 1): ╷\n│ Error: Unsupported argument\n│ \n│   on main.tf line 3:\n╵".into();
    let parts = Comments::new()
        .logs_in_check(true)
        .plan_comment(&view, COMMENT_LIMIT)
        .unwrap();
    let body = &parts[0];
    assert_balanced(body);
    assert!(
        !body.contains("<code>live/prod/app/frontend</code> — full message"),
        "{body}"
    );
    insta::assert_snapshot!("comment_plan_failed_logs_in_check", body);
    let apply = ApplyView {
        merge_commit: None,
        plan_id: "3f9a2c1b7d4e".into(),
        outcome: ApplyOutcome::Partial,
        units: vec![
            apply_unit("live/prod/network/vpc", ApplyStatus::Applied, ""),
            apply_unit(
                "live/prod/data/rds",
                ApplyStatus::Failed,
                "`terraform apply` failed (exit code 1): Error: boom\nmore",
            ),
            apply_unit(
                "live/prod/app/api",
                ApplyStatus::Skipped,
                "live/prod/data/rds failed",
            ),
        ],
        new_plan: None,
        steps: Vec::new(),
    };
    let body = &Comments::new()
        .logs_in_check(true)
        .apply_comment(&apply, COMMENT_LIMIT)
        .unwrap()[0];
    assert!(
        body.contains("| `live/prod/data/rds` | ❌ failed — `` `terraform apply` failed (exit code 1): Error: boom ``; details in the `cascade` check |  |  |"),
        "{body}"
    );
    assert!(!body.contains("full message"), "{body}");
}

/// One policy set's result: its `deny` and `warn` messages from `package main`.
pub(crate) fn finding(
    set: &str,
    blocking: bool,
    denies: &[&str],
    warnings: &[&str],
) -> cascade::store::PolicyResult {
    let messages = |list: &[&str], rule: &str| {
        list.iter()
            .map(|m| cascade::store::PolicyMessage {
                rule: rule.into(),
                message: m.to_string(),
            })
            .collect()
    };
    cascade::store::PolicyResult {
        set: set.into(),
        blocking,
        denies: messages(denies, "data.main.deny"),
        warnings: messages(warnings, "data.main.warn"),
        error: String::new(),
    }
}

#[test]
fn a_plan_with_policy_findings_leads_with_what_blocks_and_collapses_warnings() {
    use cascade::store::PolicyApproval;
    let db = [
        finding(
            "prod-guard",
            true,
            &["`aws_db_instance.main` is **destroyed** in prod; two approvals needed (@acme/dba)"],
            &[],
        ),
        finding(
            "costs",
            false,
            &[],
            &["`db.r6g.4xlarge` costs more than $1,000/month"],
        ),
    ];
    let app = [finding(
        "tags",
        true,
        &["missing tag `owner` on `aws_instance.web`"],
        &[],
    )];
    let approvals = [PolicyApproval {
        set: "tags".into(),
        user: "carol".into(),
        at: 1,
    }];
    let mut view = realistic_plan();
    view.policies = cascade::comment::policy_views(
        [
            ("live/prod/data/rds", &db[..]),
            ("live/prod/app/web", &app[..]),
        ]
        .into_iter(),
        &approvals,
    );
    let body = render_plan(&view);
    assert_balanced(&body);
    assert!(!body.contains("@acme/dba"), "{body}");
    let blocking = body.find("Policies: blocking").expect("the section");
    assert!(blocking < body.find("Destroys and replacements").unwrap());
    insta::assert_snapshot!("comment_plan_policies", body);
}
