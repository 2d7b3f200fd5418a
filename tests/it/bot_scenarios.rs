//! The GitHub App end to end: a stateful fake GitHub over HTTP, local git
//! remotes, the real server driven with signed webhooks, and the real
//! terraform on the bundled example.

use crate::support;
use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::replies::redacted;

use bot_world::{DNS_APPLIED, REPO, push_change, serve_binary, serve_process, world, world_with};
use fake_github::{FileChange, PrSpec};
use std::ffi::OsStr;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_pull_request_posts_one_plan_comment_and_a_check_run() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let before = w.fake.write_calls();
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan comment and the completed check", |w| {
        w.checks_done(&w.head_sha) && !w.bot_texts(n).is_empty()
    })
    .await;
    let comments = w.bot_texts(n);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].contains("global/dns"), "{}", comments[0]);
    let id = w.plan_id(n);
    assert_eq!(id.len(), 12);
    let check = &w.fake.check_runs(REPO, &w.head_sha)[0];
    let states: Vec<&str> = check.history.iter().map(|s| s.status.as_str()).collect();
    assert_eq!(states.first(), Some(&"in_progress"), "{states:?}");
    assert_eq!(
        check.current().conclusion.as_deref(),
        Some("action_required")
    );
    assert!(
        w.fake.write_calls() - before <= 3,
        "GitHub writes for one plan: {}",
        w.fake.write_calls() - before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_updates_the_same_comment_and_the_old_id_is_refused() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the first plan", |w| w.checks_done(&w.head_sha))
        .await;
    let old = w.plan_id(n);
    let new_head = push_change(&w, "feature", "global/dns/main.tf", "a second change");
    w.synchronize(n, &new_head, "global/dns/main.tf").await;
    w.until("the second plan", |w| w.checks_done(&new_head))
        .await;
    let comments = w.bot_comments(n);
    assert_eq!(comments.len(), 1, "one comment, edited in place");
    assert!(!comments[0].edits.is_empty());
    let new = w.plan_id(n);
    assert_ne!(new, old);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", &format!("/apply {old}")).await;
    w.until("the refusal", |w| w.bot_texts(n).len() == 2).await;
    let reply = &w.bot_texts(n)[1];
    assert!(reply.contains(&new) && reply.contains("latest"), "{reply}");
    insta::assert_snapshot!("apply_refused_stale_id", redacted(reply));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_is_refused_without_write_permission_approval_or_the_right_id() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    // A reader may not apply.
    w.comment(n, "mallory", &format!("/apply {id}")).await;
    w.until("the permission refusal", |w| w.bot_texts(n).len() == 2)
        .await;
    assert!(
        w.bot_texts(n)[1].contains("write permission"),
        "{}",
        w.bot_texts(n)[1]
    );
    insta::assert_snapshot!(
        "apply_refused_without_write_permission",
        redacted(&w.bot_texts(n)[1])
    );
    // A writer, before any approval.
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the approval refusal", |w| w.bot_texts(n).len() == 3)
        .await;
    assert!(
        w.bot_texts(n)[2].contains("approving review"),
        "{}",
        w.bot_texts(n)[2]
    );
    insta::assert_snapshot!(
        "apply_refused_without_approval",
        redacted(&w.bot_texts(n)[2])
    );
    // A wrong id.
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", "/apply deadbeefdead").await;
    w.until("the wrong-id refusal", |w| w.bot_texts(n).len() == 4)
        .await;
    assert!(w.bot_texts(n)[3].contains(&id), "{}", w.bot_texts(n)[3]);
    insta::assert_snapshot!("apply_refused_wrong_id", redacted(&w.bot_texts(n)[3]));
    // A malformed command gets help naming the mistake.
    w.comment(n, "bob", "/apply").await;
    w.until("the help reply", |w| w.bot_texts(n).len() == 5)
        .await;
    assert!(
        w.bot_texts(n)[4].contains("/apply"),
        "{}",
        w.bot_texts(n)[4]
    );
    insta::assert_snapshot!("apply_without_an_id", redacted(&w.bot_texts(n)[4]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_apply_applies_and_updates_the_comment_and_check() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    let writes = w.fake.write_calls();
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply result", |w| {
        w.bot_texts(n)
            .iter()
            .any(|t| t.starts_with("<!-- cascade:apply"))
    })
    .await;
    let result = w
        .bot_texts(n)
        .into_iter()
        .find(|t| t.starts_with("<!-- cascade:apply"))
        .unwrap();
    assert!(result.contains("global/dns"), "{result}");
    let state = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/global/dns/terraform.tfstate");
    assert!(
        state.is_file(),
        "global/dns was applied in the pull request's checkout"
    );
    let check = &w.fake.check_runs(REPO, &w.head_sha)[0];
    assert_eq!(check.current().status, "completed");
    assert!(
        w.fake.write_calls() - writes <= 3,
        "writes for one apply: {}",
        w.fake.write_calls() - writes
    );
    let eyes = w.fake.reactions(
        w.fake
            .comments(REPO, n)
            .iter()
            .rev()
            .find(|c| c.author == "bob")
            .unwrap()
            .id,
    );
    assert!(eyes.iter().any(|(_, r)| r == "eyes"), "{eyes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_is_not_planned_and_says_why() {
    let w = world().await;
    let n = w.open_pr("eve", "feature", &w.head_sha, true);
    w.send_pr(n, "opened").await;
    w.until("the fork comment", |w| !w.bot_texts(n).is_empty())
        .await;
    assert!(w.bot_texts(n)[0].contains("forks"), "{}", w.bot_texts(n)[0]);
    insta::assert_snapshot!("fork_not_planned", redacted(&w.bot_texts(n)[0]));
    assert!(w.fake.check_runs(REPO, &w.head_sha).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_delivery_fifty_times_plans_once() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let delivery = w.fake.pull_request_event(REPO, n, "opened");
    let mut statuses = Vec::new();
    for _ in 0..50 {
        statuses.push(delivery.post(&w.hook()).await.status().as_u16());
    }
    assert_eq!(statuses[0], 202);
    assert!(statuses[1..].iter().all(|s| *s == 200), "{statuses:?}");
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    w.settled().await;
    assert_eq!(w.bot_texts(n).len(), 1);
    assert_eq!(w.fake.check_runs(REPO, &w.head_sha).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_applies_at_once_apply_once() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.set_permission(REPO, "carol", "write");
    w.fake.approve(REPO, n, "bob");
    let command = format!("/apply {id}");
    let (a, b) = tokio::join!(
        w.comment(n, "bob", &command),
        w.comment(n, "carol", &command)
    );
    assert_eq!((a, b), (202, 202));
    w.until("both answers", |w| w.bot_texts(n).len() >= 3).await;
    let texts = w.bot_texts(n);
    let results = texts
        .iter()
        .filter(|t| t.starts_with("<!-- cascade:apply"))
        .count();
    assert_eq!(results, 1, "{texts:#?}");
    assert!(
        texts
            .iter()
            // The second is refused: the plan was consumed, is running, or was replaced by the
            // new plan the first apply returned.
            .any(|t| t.contains("already applied")
                || t.contains("already running")
                || t.contains("not this pull request's latest plan")),
        "{texts:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_pull_request_on_a_locked_unit_plans_the_rest_and_names_the_lock() {
    let w = world().await;
    let first = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(first, "opened").await;
    w.until("the first plan", |w| w.checks_done(&w.head_sha))
        .await;
    let plan = w.plan_comment(first);
    assert!(
        plan.contains("/apply "),
        "the first plans and locks: {plan}"
    );
    let other = push_change(&w, "other", "global/dns/main.tf", "a competing change");
    let second = w.open_pr("dave", "other", &other, false);
    w.send_pr(second, "opened").await;
    w.until("the second plan", |w| w.checks_done(&other)).await;
    let text = &w.bot_texts(second)[0];
    assert!(text.contains("locked by #1"), "{text}");
    assert!(
        !text.contains("`global/dns` — `global/dns`"),
        "the locked line does not repeat the unit: {text}"
    );
    // Closing the first releases its locks: the second is planned again by itself.
    w.fake.close_pull_request(REPO, first, true);
    assert_eq!(w.send_pr(first, "closed").await, 202);
    w.until("the re-plan without the lock", |w| {
        !w.bot_texts(second)[0].contains("locked by #1")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_or_missing_signature_is_refused_and_nothing_is_stored() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let delivery = w.fake.pull_request_event(REPO, n, "opened");
    let forged = delivery.clone().signed_with("not the secret");
    assert_eq!(forged.post(&w.hook()).await.status().as_u16(), 401);
    let client = reqwest::Client::new();
    let unsigned = client
        .post(w.hook())
        .header("X-GitHub-Event", "pull_request")
        .header("X-GitHub-Delivery", &delivery.id)
        .body(delivery.body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status().as_u16(), 401);
    w.settled().await;
    assert!(w.bot_texts(n).is_empty());
    assert_eq!(w.fake.tokens_minted(77), 0, "nothing reached GitHub");
    // The same delivery id, properly signed, is new to cascade: nothing was stored before.
    assert_eq!(delivery.post(&w.hook()).await.status().as_u16(), 202);
    let malformed = reqwest::Client::new()
        .post(w.hook())
        .header("X-GitHub-Event", "pull_request")
        .header("X-GitHub-Delivery", "x-1")
        .header(
            "X-Hub-Signature-256",
            fake_github::signature(&w.fake.webhook_secret(), b"{not json"),
        )
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status().as_u16(), 400);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    assert!(
        plan.contains(&format!("Head `{}`", &w.head_sha[..7])),
        "{plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafts_wait_installations_are_recorded_and_probes_answer() {
    let w = world().await;
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            head_ref: "feature".into(),
            head_sha: w.head_sha.clone(),
            base_sha: w.base_sha.clone(),
            draft: true,
            ..PrSpec::default()
        },
    );
    assert_eq!(w.send_pr(n, "opened").await, 202);
    assert_eq!(
        w.fake
            .installation_event(77, "created")
            .post(&w.hook())
            .await
            .status()
            .as_u16(),
        202
    );
    let ping = reqwest::Client::new();
    let base = format!("http://{}", w.server.as_ref().unwrap().addr);
    assert_eq!(
        ping.get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    assert_eq!(
        ping.get(format!("{base}/readyz"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    w.settled().await;
    assert!(w.bot_texts(n).is_empty(), "a draft is not planned");
    let metrics = ping
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("cascade_deliveries_total"), "{metrics}");
    // Ready for review: planned.
    w.fake.set_draft(REPO, n, false);
    w.send_pr(n, "ready_for_review").await;
    w.until("the plan after ready for review", |w| {
        w.checks_done(&w.head_sha)
    })
    .await;
    let plan = w.plan_comment(n);
    assert!(plan.contains("/apply "), "{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_server_mid_plan_then_restarting_finishes_the_plan_without_redoing_units() {
    let w = world().await;
    let tools = tempfile::tempdir().unwrap();
    let (terraform, log) = support::slow_terraform(tools.path());
    // A change every unit reads: root.hcl.
    let head = push_change(&w, "wide", "root.hcl", "touch every unit");
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            head_ref: "wide".into(),
            head_sha: head.clone(),
            base_sha: w.base_sha.clone(),
            files: vec![FileChange::modified("root.hcl")],
            ..PrSpec::default()
        },
    );
    let (mut server, port) =
        serve_binary(&w, &[OsStr::new("--terraform-bin"), terraform.as_os_str()]).await;
    let hook = format!("http://127.0.0.1:{port}/webhooks/github");
    assert_eq!(
        w.fake
            .pull_request_event(REPO, n, "opened")
            .post(&hook)
            .await
            .status()
            .as_u16(),
        202
    );
    // Kill it once a few units are planned.
    for _ in 0..600 {
        let planned = std::fs::read_to_string(&log)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if planned >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill().unwrap();
    server.wait().unwrap();
    let before = std::fs::read_to_string(&log).unwrap().lines().count();
    assert!(before < 11, "killed mid-plan ({before} of 11 units)");
    tokio::time::sleep(Duration::from_millis(1500)).await; // an orphaned terraform finishes
    let mut server = serve_process(
        &w,
        port,
        &[OsStr::new("--terraform-bin"), terraform.as_os_str()],
    );
    w.until("the plan after the restart", |w| w.checks_done(&head))
        .await;
    server.kill().unwrap();
    server.wait().unwrap();
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for l in &lines {
        *counts.entry(l.as_str()).or_default() += 1;
    }
    assert_eq!(counts.len(), 11, "every unit planned: {counts:#?}");
    // Units planned before the kill are not planned again; at most the one in flight is.
    let twice = counts.values().filter(|c| **c > 1).count();
    assert!(
        twice <= 1 && counts.values().all(|c| *c <= 2),
        "{counts:#?}"
    );
    assert_eq!(w.bot_texts(n).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_base_branch_config_plans_drafts_and_drops_the_approval_requirement() {
    let w = world_with("drafts: true\napply_requirements: [mergeable]\n").await;
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            head_ref: "feature".into(),
            head_sha: w.head_sha.clone(),
            base_sha: w.base_sha.clone(),
            draft: true,
            ..PrSpec::default()
        },
    );
    w.send_pr(n, "opened").await;
    w.until("the draft's plan", |w| w.checks_done(&w.head_sha))
        .await;
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply result without any review", |w| w.applied(n))
        .await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
}
