//! Policies on GitLab: the same flow as on GitHub, spelled `cascade approve-policies` and
//! `cascade apply`, with GitLab's users and its own approvals.

use crate::support::gitlab_world::{AUTHOR, REVIEWER, World, world_with_files};

const POLICIES: &str =
    "\npolicies:\n  - name: guard\n    path: policies/guard\n    owners: {users: [bob, alice]}\n";

const GUARD: &str = r#"package main

import rego.v1

deny contains msg if {
    input.unit.path == "global/dns"
    input.change.add > 0
    msg := sprintf("global/dns changes need the security team (merge request !%d)", [input.pull_request.number])
}
"#;

async fn planned(w: &World) -> u64 {
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the plan", |w| w.status_done(&w.head_sha)).await;
    iid
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascade_approve_policies_by_an_owner_lets_the_apply_through() {
    let w = world_with_files(POLICIES, &[("policies/guard/guard.rego", GUARD)]).await;
    let iid = planned(&w).await;
    let plan = w.nth_note(iid, 1).await;
    let id = w.plan_id(iid);
    assert!(plan.contains("Policies: blocking (1)"), "{plan}");
    assert!(
        plan.contains(&format!("`cascade approve-policies {id}`")),
        "{plan}"
    );
    // The policy saw the merge request's iid; `!1` is broken so it links nothing.
    assert!(plan.contains("(merge request \\!\u{2060}1\\)"), "{plan}");
    w.fake.approve(w.project, iid, REVIEWER);
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    let refused = w.nth_note(iid, 2).await;
    assert!(refused.contains("policies block plan"), "{refused}");
    assert!(
        refused.contains(&format!("`cascade approve-policies {id}`")),
        "{refused}"
    );
    w.note(iid, AUTHOR, &format!("cascade approve-policies {id}"))
        .await;
    let own = w.nth_note(iid, 3).await;
    assert!(
        own.contains("@alice cannot approve this merge request's policies"),
        "{own}"
    );
    w.note(iid, REVIEWER, &format!("cascade approve-policies {id}"))
        .await;
    let approved = w.nth_note(iid, 4).await;
    assert!(
        approved.contains("@bob approved the failures"),
        "{approved}"
    );
    w.note(iid, REVIEWER, &format!("cascade apply {id}")).await;
    w.until("the apply result", |w| w.apply_result(iid).is_some())
        .await;
    let result = w.apply_result(iid).unwrap();
    assert!(
        crate::support::applied_units(&result)
            .iter()
            .any(|u| u == "global/dns"),
        "{result}"
    );
    w.finish().await;
}
