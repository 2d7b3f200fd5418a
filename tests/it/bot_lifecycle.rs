//! Lifecycle faults, end to end over the fake GitHub: fork pull requests planned with
//! `--allow-forks`, SIGTERM on an idle server, a comment create that GitHub stored but
//! answered 502, apply results that say each thing once (and a unit someone else
//! changed after approval), saved plans deleted, and a plan comment's extra parts
//! edited in place and deleted when a plan needs fewer.

use crate::support;
use crate::support::bot_world;
use crate::support::fake_github;

use bot_world::{
    DNS_APPLIED, REPO, git_out, push, push_change, serve_binary, world, world_configured,
};
use fake_github::{Failure, FileChange, PrSpec};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_is_planned_from_refs_pull_with_allow_forks() {
    let w = world_configured("", |c| c.allow_forks = true).await;
    // eve's fork: a clone of the repository with a commit the base never had.
    let forks = tempfile::tempdir().unwrap();
    let fork = forks.path().join("infra");
    git_out(
        forks.path(),
        &["clone", "-q", w.origin.to_str().unwrap(), "infra"],
    );
    git_out(
        &fork,
        &["checkout", "-q", "-b", "eve-change", "origin/main"],
    );
    let file = fork.join("global/dns/main.tf");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\n# from a fork\n")).unwrap();
    git_out(&fork, &["commit", "-qam", "from a fork"]);
    let head = git_out(&fork, &["rev-parse", "HEAD"]);
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            author: "eve".into(),
            head_ref: "eve-change".into(),
            head_sha: head.clone(),
            base_sha: w.base_sha.clone(),
            fork: true,
            files: vec![FileChange::modified("global/dns/main.tf")],
            head_repo: Some(fork.clone()),
            ..PrSpec::default()
        },
    );
    // As on GitHub: the base repository has the fork's head only under refs/pull/<n>/head.
    let refs = git_out(&w.origin, &["for-each-ref", "--contains", &head]);
    assert!(
        refs.lines()
            .all(|l| l.ends_with(&format!("refs/pull/{n}/head"))),
        "{refs}"
    );
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the fork's plan", |w| w.checks_done(&head)).await;
    let text = &w.bot_texts(n)[0];
    assert!(
        text.starts_with("<!-- cascade:plan") && text.contains("global/dns"),
        "{text}"
    );
    let check = w.fake.check_runs(REPO, &head)[0].current().clone();
    assert_eq!(check.conclusion.as_deref(), Some("action_required"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_on_an_idle_server_exits_at_once() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let (mut server, port) =
        serve_binary(&w, &[OsStr::new("--shutdown-grace"), OsStr::new("600")]).await;
    let hook = format!("http://127.0.0.1:{port}/webhooks/github");
    let delivery = w.fake.pull_request_event(REPO, n, "opened");
    assert_eq!(delivery.post(&hook).await.status().as_u16(), 202);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    assert!(plan.contains("/apply "), "{plan}");
    // Idle again (a pull request's worker ends with its queue): SIGTERM stops it now.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    loop {
        if let Some(status) = server.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "an idle server did not exit within a second of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_stored_by_github_despite_a_502_is_not_posted_twice() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.fake
        .fail_next_after_storing("issues.comments.create", Failure::status(502));
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    assert_eq!(w.bot_texts(n).len(), 1, "{:#?}", w.bot_texts(n));
    // And it is the comment cascade edits on the next plan.
    let head = push_change(&w, "feature", "global/dns/main.tf", "again");
    w.synchronize(n, &head, "global/dns/main.tf").await;
    w.until("the second plan", |w| w.checks_done(&head)).await;
    let comments = w.bot_comments(n);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(!comments[0].edits.is_empty());
}

/// The `.tfplan` files under the server's data directory.
fn saved_plans(dir: &Path) -> Vec<PathBuf> {
    support::files_with_extension(dir, "tfplan")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_plans_are_deleted_when_superseded_applied_or_closed() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let first = saved_plans(w.data.path());
    assert!(!first.is_empty(), "a plan saves its plan files");
    // Superseded by a push: the old plan's files go, the new plan's stay.
    let head = push_change(&w, "feature", "global/dns/main.tf", "again");
    w.synchronize(n, &head, "global/dns/main.tf").await;
    w.until("the second plan", |w| w.checks_done(&head)).await;
    // The old plan's files go just after the check is posted (the reviewer's check is
    // not held back for a deletion), so wait for them rather than race the bot.
    w.until("the first plan's files deleted", |_| {
        first.iter().all(|p| !p.exists())
    })
    .await;
    let second = saved_plans(w.data.path());
    assert_eq!(second.len(), first.len(), "{second:#?}");
    // Applied: consumed, its files and the apply's own fresh plans go.
    let id = w.plan_id(n);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply", |w| w.applied(n)).await;
    assert_eq!(w.applied_units(n), DNS_APPLIED);
    w.until("no saved plans", |w| saved_plans(w.data.path()).is_empty())
        .await;
    // Closed: a new plan of another pull request, then its close.
    let other = push_change(&w, "other", "dev/network/main.tf", "another change");
    let m = w.open_pr("dave", "other", &other, false);
    w.send_pr(m, "opened").await;
    w.until("the other plan", |w| w.checks_done(&other)).await;
    let plan = w.plan_comment(m);
    assert!(plan.contains("| `dev/network` |"), "{plan}");
    assert!(!saved_plans(w.data.path()).is_empty());
    w.fake.close_pull_request(REPO, m, false);
    w.send_pr(m, "closed").await;
    w.until("no saved plans after the close", |w| {
        saved_plans(w.data.path()).is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_someone_else_applied_after_approval_is_reported_with_its_dependents_waiting() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let id = w.plan_id(n);
    // Someone applies global/dns by hand, in the same state, after the review.
    let unit = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/global/dns");
    for args in [
        &["init", "-input=false"][..],
        &["apply", "-auto-approve", "-input=false"][..],
    ] {
        let out = std::process::Command::new("terraform")
            .args(args)
            .current_dir(&unit)
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    w.until("the apply result", |w| w.applied(n)).await;
    let text = w.apply_comment(n);
    let line = |unit: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("| `{unit}` |")))
            .unwrap_or_else(|| panic!("no line for {unit}: {text}"))
            .to_string()
    };
    let dns = line("global/dns");
    assert!(
        dns.contains("plan changed since approval, not applied")
            && dns.contains("now it changes nothing"),
        "{dns}"
    );
    assert_eq!(
        dns.matches("changed since approval").count(),
        1,
        "said once: {dns}"
    );
    for dependent in ["dev/dns", "prod/dns"] {
        let l = line(dependent);
        assert!(
            l.contains("skipped: `global/dns's plan changed since approval`"),
            "{l}"
        );
        assert!(!l.contains("did not succeed"), "{l}");
    }
    assert!(!unit.join("../../dev/dns/terraform.tfstate").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_plan_edits_its_extra_parts_in_place_and_deletes_the_surplus() {
    let w = world().await;
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", "big", "feature"]);
    let units = ["global/dns", "dev/network", "prod/network", "dev/app"];
    for unit in units {
        std::fs::write(dir.join(unit).join("big.tf"), support::big_module(150)).unwrap();
    }
    git_out(dir, &["add", "-A"]);
    git_out(dir, &["commit", "-qm", "big plans"]);
    let head = push(&w, "big");
    let n = w.open_pr("alice", "big", &head, false);
    let writes = w.fake.write_calls();
    w.send_pr(n, "opened").await;
    w.until("the long plan", |w| w.checks_done(&head)).await;
    let first = w.bot_comments(n);
    assert!(first.len() >= 2, "a plan in parts: {}", first.len());
    assert_eq!(
        w.fake.write_calls() - writes,
        2 + first.len() as u64,
        "the check twice and one write per part"
    );
    // A new push with a plan as long: the same comments, edited.
    let dir = w.work.path();
    for unit in units {
        let mut text = support::big_module(150);
        text.push_str("# again\n");
        std::fs::write(dir.join(unit).join("big.tf"), text).unwrap();
    }
    git_out(dir, &["commit", "-qam", "big plans again"]);
    let head = push(&w, "big");
    w.fake.push(REPO, n, &head, vec![]);
    w.send_pr(n, "synchronize").await;
    w.until("the second long plan", |w| w.checks_done(&head))
        .await;
    let second = w.bot_comments(n);
    let ids = |cs: &[fake_github::CommentSnapshot]| cs.iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(ids(&second), ids(&first), "edited in place, none added");
    assert!(second.iter().all(|c| !c.edits.is_empty()));
    // A short plan: one comment left, the extra parts deleted.
    for unit in units {
        std::fs::remove_file(dir.join(unit).join("big.tf")).unwrap();
    }
    git_out(dir, &["commit", "-qam", "small again"]);
    let head = push(&w, "big");
    w.fake.push(REPO, n, &head, vec![]);
    let writes = w.fake.write_calls();
    w.send_pr(n, "synchronize").await;
    w.until("the short plan", |w| w.checks_done(&head)).await;
    let third = w.bot_comments(n);
    assert_eq!(ids(&third), ids(&first[..1]), "{third:#?}");
    assert!(
        third[0].body.contains(&format!("Head `{}`", &head[..7])),
        "the short plan: {}",
        third[0].body
    );
    assert_eq!(
        w.fake.write_calls() - writes,
        3 + (first.len() as u64 - 1),
        "three writes, and one deletion per surplus part"
    );
}
