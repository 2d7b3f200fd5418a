//! cascade's GitLab client against the stateful fake GitLab: identity and the token,
//! notes (paged, created once even when GitLab fails after storing, edited, deleted),
//! the commit status and GitLab's transition rules, members, approvals, "mergeable"
//! without cascade's own status, a merge request's commits, rate limits and server
//! errors, and git over smart HTTP with the token as Basic credentials; the default
//! branch and issues (drift).

use crate::support;

use std::time::{Duration, Instant};

use cascade::forge::gitlab::{ApiError, GitLab, GitLabBuilder};
use cascade::forge::types::{
    Actor, CheckOutput, CheckStatus, CommitPerson, ForgeRef, Membership, Mergeable,
};
use cascade::forge::{PrNumber, PullRequest, Sha};
use support::fake_gitlab::{
    BOT_USERNAME, DEVELOPER, DiffFile, Failure, FakeGitLab, MrSpec, REPORTER, TOKEN,
};

const PATH: &str = "acme/platform/infra";

/// Test-sized waits: real ones would be seconds.
fn quick(builder: GitLabBuilder) -> GitLabBuilder {
    builder
        .max_wait(Duration::from_secs(5))
        .rate_limit_backoff(Duration::from_millis(20))
        .server_error_backoff(Duration::from_millis(10))
}

struct World {
    fake: FakeGitLab,
    gitlab: GitLab,
    project: u64,
    iid: u64,
}

async fn world() -> World {
    let fake = FakeGitLab::start().await;
    let project = fake.add_project(PATH, None);
    let iid = fake.open_merge_request(project, MrSpec::default());
    let gitlab = quick(GitLab::builder(&fake.url(), TOKEN)).build().unwrap();
    World {
        fake,
        gitlab,
        project,
        iid,
    }
}

fn actor(fake: &FakeGitLab, username: &str) -> Actor {
    Actor {
        id: Some(fake.user(username)),
        login: username.to_string(),
    }
}

fn count(fake: &FakeGitLab, method: &str, path_end: &str) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == method && r.path.ends_with(path_end))
        .count()
}

#[tokio::test]
async fn the_token_s_user_is_read_once() {
    let w = world().await;
    let me = w.gitlab.current_user().await.unwrap();
    assert_eq!(me.id, Some(w.fake.bot_id()));
    assert_eq!(me.login, BOT_USERNAME);
    w.gitlab.current_user().await.unwrap();
    assert_eq!(count(&w.fake, "GET", "/api/v4/user"), 1);
    assert!(w.fake.requests().iter().all(|r| r.authorized));
}

#[tokio::test]
async fn a_refused_token_says_what_to_do_and_never_shows_itself() {
    let fake = FakeGitLab::start().await;
    let wrong = "glpat-wrong-but-long-token-value";
    let gitlab = quick(GitLab::builder(&fake.url(), wrong)).build().unwrap();
    let err = gitlab.current_user().await.unwrap_err();
    let text = format!("{err:#} {err:?} {gitlab:?}");
    assert!(!text.contains(wrong) && !text.contains(TOKEN), "{text}");
    assert!(text.contains("401"), "{text}");
    assert!(text.contains("`api` scope"), "{text}");
    assert_eq!(err.downcast_ref::<ApiError>().map(|e| e.status), Some(401));
    // A 401 is not retried.
    assert_eq!(count(&fake, "GET", "/api/v4/user"), 1);
    assert!(!fake.requests()[0].authorized);
    // A revoked token is refused the same way.
    let gitlab = quick(GitLab::builder(&fake.url(), TOKEN)).build().unwrap();
    fake.revoke_tokens();
    let err = gitlab.current_user().await.unwrap_err();
    assert!(!format!("{err:#}").contains(TOKEN));
}

#[tokio::test]
async fn the_instance_url_must_be_a_url() {
    for bad in [
        "gitlab.example.com",
        "ftp://gitlab.example.com",
        "https://user:pw@gitlab.example.com",
    ] {
        assert!(GitLab::new(bad, TOKEN).is_err(), "{bad}");
    }
    let err = GitLab::new("https://gitlab.example.com", " ").unwrap_err();
    assert!(format!("{err:#}").contains("`api` scope"), "{err:#}");
    let gitlab = GitLab::new("https://gitlab.example.com/", TOKEN).unwrap();
    assert_eq!(gitlab.url(), "https://gitlab.example.com");
    let project = gitlab.project(42);
    assert_eq!(project.fork_head_ref(7), "refs/merge-requests/7/head");
    assert_eq!(project.comment_limit(), 1_000_000);
    assert_eq!(project.spelling().command("unlock"), "cascade unlock");
    let credential = project.git_credential().await.unwrap();
    assert_eq!(credential.token(), TOKEN);
    assert_eq!(
        credential.origin().to_string(),
        "https://gitlab.example.com"
    );
    assert!(!format!("{project:?}{gitlab:?}{credential:?}").contains(TOKEN));
}

#[tokio::test]
async fn a_merge_request_reads_as_a_change_request() {
    let w = world().await;
    let cr = w
        .gitlab
        .project(w.project)
        .change_request(PATH, w.iid)
        .await
        .unwrap();
    assert_eq!(
        cr,
        PullRequest {
            merge_commit: None,
            forge: ForgeRef::GitLab {
                project_id: w.project,
            },
            number: PrNumber::new(w.iid),
            head_sha: Sha::new(&"a".repeat(40)).unwrap(),
            head_ref: "feature".into(),
            base_sha: Some(Sha::new(&"b".repeat(40)).unwrap()),
            base_ref: "main".into(),
            draft: false,
            fork: false,
            author: Some("alice".into()),
            open: true,
            // Pipelines must succeed and there is no pipeline yet; cascade's own status
            // is not one, so nothing blocks.
            mergeable: Some(Mergeable::Yes),
            web_url: Some(format!("{}/{PATH}", w.fake.url())),
            pusher: None,
            labels: Some(Vec::new()),
        }
    );
    let fork = w.fake.open_merge_request(
        w.project,
        MrSpec {
            fork: true,
            draft: true,
            ..MrSpec::default()
        },
    );
    let cr = w
        .gitlab
        .project(w.project)
        .change_request(PATH, fork)
        .await
        .unwrap();
    assert!(cr.fork && cr.draft);
    assert_eq!(
        cr.mergeable,
        Some(Mergeable::No {
            state: "draft_status".into()
        })
    );
    w.fake.merge(w.project, fork);
    let cr = w
        .gitlab
        .project(w.project)
        .change_request(PATH, fork)
        .await
        .unwrap();
    assert!(!cr.open);
    // The project's clone URL is read once.
    assert_eq!(
        count(&w.fake, "GET", &format!("/api/v4/projects/{}", w.project)),
        1
    );
    let err = w
        .gitlab
        .project(w.project)
        .change_request(PATH, 99)
        .await
        .unwrap_err();
    assert_eq!(err.downcast_ref::<ApiError>().map(|e| e.status), Some(404));
}

#[tokio::test]
async fn cascade_s_own_status_never_makes_a_merge_request_unmergeable() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    let head = "a".repeat(40);
    let set = |status, title: &'static str| {
        let (project, head) = (&project, &head);
        async move {
            project
                .set_check(
                    PATH,
                    w.iid,
                    head,
                    "feature",
                    None,
                    &CheckOutput::new(status, title, ""),
                )
                .await
                .unwrap()
        }
    };
    // Failed (a unit failed to plan): "pipelines must succeed" says the pipeline failed;
    // planning (pending), then waiting for `cascade apply` (running): still running.
    for (status, title, detailed) in [
        (
            CheckStatus::Failure,
            "cascade: 1 unit failed",
            "ci_must_pass",
        ),
        (CheckStatus::InProgress, "planning", "ci_still_running"),
        (
            CheckStatus::ActionRequired,
            "comment `cascade apply 3f9a`",
            "ci_still_running",
        ),
    ] {
        set(status, title).await;
        assert_eq!(w.fake.detailed_merge_status(w.project, w.iid), detailed);
        assert_eq!(
            project
                .change_request(PATH, w.iid)
                .await
                .unwrap()
                .mergeable
                .unwrap(),
            Mergeable::Yes
        );
    }

    w.fake.add_status(w.project, &head, "lint", "failed");
    assert_eq!(
        project
            .change_request(PATH, w.iid)
            .await
            .unwrap()
            .mergeable
            .unwrap(),
        Mergeable::No {
            state: "ci_still_running".into()
        }
    );
    // A retried job counts by its newest run.
    w.fake.add_status(w.project, &head, "lint", "success");
    w.fake.add_status(w.project, &head, "deploy", "manual");
    assert_eq!(
        project
            .change_request(PATH, w.iid)
            .await
            .unwrap()
            .mergeable
            .unwrap(),
        Mergeable::Yes
    );
    w.fake.add_status(w.project, &head, "tests", "running");
    assert!(matches!(
        project
            .change_request(PATH, w.iid)
            .await
            .unwrap()
            .mergeable
            .unwrap(),
        Mergeable::No { .. }
    ));

    for (set, expected) in [
        (
            "checking",
            Mergeable::Unknown {
                state: "checking".into(),
            },
        ),
        (
            "conflict",
            Mergeable::No {
                state: "conflict".into(),
            },
        ),
        ("mergeable", Mergeable::Yes),
    ] {
        w.fake
            .set_detailed_merge_status(w.project, w.iid, Some(set));
        assert_eq!(
            project
                .change_request(PATH, w.iid)
                .await
                .unwrap()
                .mergeable
                .unwrap(),
            expected
        );
    }
}

#[tokio::test]
async fn own_notes_come_from_every_page_oldest_first() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    let mut ids = Vec::new();
    for i in 0..130 {
        if i % 3 == 0 {
            w.fake
                .user_note(w.project, w.iid, "bob", &format!("user {i}"));
        }
        ids.push(
            project
                .create_comment(PATH, w.iid, &format!("cascade {i}"))
                .await
                .unwrap(),
        );
    }
    // A system note by the bot's user (GitLab writes these) is never cascade's comment.
    w.fake
        .system_note(w.project, w.iid, BOT_USERNAME, "added 1 commit");
    let own = project.own_comments(PATH, w.iid).await.unwrap();
    assert_eq!(own.iter().map(|c| c.id).collect::<Vec<_>>(), ids);
    assert_eq!(own[129].body, "cascade 129");
    // GitLab's timestamps are read (the fake writes them as GitLab does, in milliseconds).
    let now = std::time::SystemTime::now();
    assert!(own.iter().all(|c| {
        c.created_at
            .is_some_and(|at| now.duration_since(at).unwrap_or_default() < Duration::from_secs(60))
    }));
    let pages: Vec<_> = w
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/notes"))
        .filter_map(|r| r.query)
        .collect();
    assert!(pages.iter().any(|q| q.contains("page=2")), "{pages:?}");
    assert!(pages.iter().all(|q| q.contains("sort=asc")), "{pages:?}");
}

#[tokio::test]
async fn a_note_is_edited_and_deleted_and_a_gone_note_counts_as_deleted() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    let id = project
        .create_comment(PATH, w.iid, "plan v1")
        .await
        .unwrap();
    project
        .edit_comment(PATH, w.iid, id, "plan v2")
        .await
        .unwrap();
    let notes = w.fake.bot_notes(w.project, w.iid);
    assert_eq!(
        (notes[0].body.as_str(), notes[0].edits.clone()),
        ("plan v2", vec!["plan v1".to_string()])
    );
    project.delete_comment(PATH, w.iid, id).await.unwrap();
    assert!(w.fake.bot_notes(w.project, w.iid).is_empty());
    project.delete_comment(PATH, w.iid, id).await.unwrap();
    assert_eq!(w.fake.write_calls(), 3);
    assert_eq!(w.gitlab.write_calls(), 3);
    // Someone else's note cannot be edited.
    let theirs = w.fake.user_note(w.project, w.iid, "bob", "hello");
    let err = project
        .edit_comment(PATH, w.iid, theirs.id, "x")
        .await
        .unwrap_err();
    assert_eq!(err.downcast_ref::<ApiError>().map(|e| e.status), Some(403));
}

#[tokio::test]
async fn a_note_gitlab_stored_before_failing_is_found_not_posted_twice() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    // An older note with the same body must not be taken for the new one.
    let old = project
        .create_comment(PATH, w.iid, "same body")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    w.fake
        .fail_next_after_storing("notes.create", Failure::status(502));
    let id = project
        .create_comment(PATH, w.iid, "same body")
        .await
        .unwrap();
    let notes = w.fake.bot_notes(w.project, w.iid);
    assert_eq!(notes.len(), 2);
    assert_ne!(id, old);
    assert_eq!(notes[1].id, id);
    assert_eq!(count(&w.fake, "POST", "/notes"), 2);

    // A 5xx before storing: posted again, once.
    w.fake.fail_next("notes.create", Failure::status(503));
    project.create_comment(PATH, w.iid, "second").await.unwrap();
    assert_eq!(w.fake.bot_notes(w.project, w.iid).len(), 3);
    assert_eq!(w.fake.write_calls(), 3);
}

/// Planning is `pending`, waiting for `cascade apply` `running` with the description
/// saying so, and only a failure is `failed`; GitLab's refused transitions are never sent.
#[tokio::test]
async fn the_status_is_pending_then_running_while_waiting_then_finished() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    let head = "a".repeat(40);
    let (project, head_sha, iid) = (&project, head.as_str(), w.iid);
    let set = |status, title: &'static str| {
        let output = CheckOutput::new(status, title, "summary");
        async move {
            project
                .set_check(PATH, iid, head_sha, "feature", None, &output)
                .await
        }
    };
    let planning = set(CheckStatus::InProgress, "cascade is planning")
        .await
        .unwrap();
    // Already in progress: no write, the same status.
    assert_eq!(
        set(CheckStatus::InProgress, "cascade is planning")
            .await
            .unwrap(),
        planning
    );
    assert_eq!(w.fake.write_calls(), 1);
    let waits = "cascade: comment cascade apply 3f9a to apply";
    let waiting = set(CheckStatus::ActionRequired, waits).await.unwrap();
    assert_eq!(waiting, planning, "pending → running on one record");
    // Planning again while it waits: nothing sent; waiting again with the same words: nothing.
    set(CheckStatus::InProgress, "cascade is planning")
        .await
        .unwrap();
    assert_eq!(
        set(CheckStatus::ActionRequired, waits).await.unwrap(),
        waiting
    );
    assert_eq!(w.fake.write_calls(), 2);
    // A new plan id to wait for: canceled, then a new running status with the new words.
    let new_waits = "cascade: comment cascade apply 77aa to apply";
    let rewaiting = set(CheckStatus::ActionRequired, new_waits).await.unwrap();
    assert_ne!(rewaiting, waiting);
    let done = set(CheckStatus::Success, "cascade: plan 77aa applied")
        .await
        .unwrap();
    assert_eq!(done, rewaiting);
    // A finished status is followed by a new one; a failure is the only red.
    set(CheckStatus::InProgress, "cascade is planning")
        .await
        .unwrap();
    set(CheckStatus::Failure, "cascade: 1 unit failed to plan")
        .await
        .unwrap();
    let statuses = w.fake.statuses(w.project, &head);
    let histories: Vec<Vec<String>> = statuses.iter().map(|s| s.history.clone()).collect();
    assert_eq!(
        histories,
        [
            vec!["pending", "running", "canceled"],
            vec!["running", "success"],
            vec!["pending", "failed"],
        ]
    );
    let descriptions: Vec<_> = statuses.iter().map(|s| s.description.clone()).collect();
    assert_eq!(
        descriptions,
        [
            Some(waits.to_string()),
            Some("cascade: plan 77aa applied".into()),
            Some("cascade: 1 unit failed to plan".into())
        ]
    );
    assert!(
        statuses
            .iter()
            .all(|s| s.name == "cascade" && s.git_ref.as_deref() == Some("feature"))
    );
    assert_eq!(w.fake.write_calls(), 7);
    assert_eq!(w.gitlab.write_calls(), 7);
}

#[tokio::test]
async fn a_refused_transition_already_in_the_requested_state_is_success() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    let head = "a".repeat(40);
    let (project, head_sha, iid) = (&project, head.as_str(), w.iid);
    let set = |status| {
        let output = CheckOutput::new(status, "t", "");
        async move {
            project
                .set_check(PATH, iid, head_sha, "feature", Some(1), &output)
                .await
        }
    };
    let id = set(CheckStatus::Success).await.unwrap();
    w.fake.fail_next(
        "statuses.create",
        Failure::bad_request("Cannot transition status via :succeed from :success (Reason(s): Status cannot transition via \"succeed\")"),
    );
    assert_eq!(set(CheckStatus::Success).await.unwrap(), id);
    assert_eq!(w.fake.write_calls(), 1);
    assert_eq!(w.gitlab.write_calls(), 1, "a refused write is not a write");
    // Refused while in another state: an error naming the status.
    w.fake.fail_next(
        "statuses.create",
        Failure::bad_request("Cannot transition status via :drop from :success"),
    );
    let err = set(CheckStatus::Failure).await.unwrap_err();
    assert!(
        format!("{err:#}").contains("cascade status to failed"),
        "{err:#}"
    );
    // The fake itself enforces GitLab's rules.
    let raw = reqwest::Client::new()
        .post(format!(
            "{}/api/v4/projects/{}/statuses/{head}",
            w.fake.url(),
            w.project
        ))
        .header("PRIVATE-TOKEN", TOKEN)
        .form(&[("state", "pending"), ("name", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 201);
    let again = reqwest::Client::new()
        .post(format!(
            "{}/api/v4/projects/{}/statuses/{head}",
            w.fake.url(),
            "acme%2Fplatform%2Finfra"
        ))
        .header("PRIVATE-TOKEN", TOKEN)
        .form(&[("state", "pending"), ("name", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 400);
    let body: serde_json::Value = again.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Cannot transition status via :enqueue from :pending")
    );
}

#[tokio::test]
async fn developers_may_apply_reporters_and_strangers_may_not() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    w.fake.set_member(w.project, "dev", Some(DEVELOPER));
    w.fake.set_member(w.project, "rep", Some(REPORTER));
    assert!(project.may_write(PATH, &actor(&w.fake, "dev")).await);
    assert!(!project.may_write(PATH, &actor(&w.fake, "rep")).await);
    assert!(!project.may_write(PATH, &actor(&w.fake, "stranger")).await);
    // Inherited from a group above the project; a user known only by name is looked up.
    w.fake.set_group_member("acme", "lead", Some(DEVELOPER));
    let by_name = Actor {
        id: None,
        login: "lead".into(),
    };
    assert!(project.may_write(PATH, &by_name).await);
    let nobody = Actor {
        id: None,
        login: "no-such-user".into(),
    };
    assert!(!project.may_write(PATH, &nobody).await);
    // Fails closed.
    w.fake.fail_next("members.project", Failure::status(500));
    w.fake.fail_next("members.project", Failure::status(500));
    w.fake.fail_next("members.project", Failure::status(500));
    w.fake.fail_next("members.project", Failure::status(500));
    assert!(!project.may_write(PATH, &actor(&w.fake, "dev")).await);
}

#[tokio::test]
async fn group_membership_is_read_through_nested_groups() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    w.fake.set_group_member("acme", "lead", Some(REPORTER));
    w.fake
        .set_group_member("acme/platform", "ops", Some(DEVELOPER));
    let m = |who: &str| actor(&w.fake, who);
    assert_eq!(
        project
            .membership("acme/platform", &m("lead"))
            .await
            .unwrap(),
        Membership::Member
    );
    assert_eq!(
        project
            .membership("acme/platform", &m("ops"))
            .await
            .unwrap(),
        Membership::Member
    );
    assert_eq!(
        project.membership("acme", &m("ops")).await.unwrap(),
        Membership::NotMember
    );
    assert_eq!(
        project.membership("other", &m("ops")).await.unwrap(),
        Membership::NotMember
    );
    w.fake.fail_next("members.group", Failure::status(403));
    assert_eq!(
        project.membership("acme", &m("lead")).await.unwrap(),
        Membership::Unreadable
    );
    assert!(
        w.fake
            .requests()
            .iter()
            .any(|r| r.path.contains("/groups/acme%2Fplatform/members/all/"))
    );
}

#[tokio::test]
async fn approvals_carry_the_head_only_when_gitlab_resets_them_on_push() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    let cr = project.change_request(PATH, w.iid).await.unwrap();
    assert!(
        project
            .approvers(PATH, w.iid, &cr)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        count(&w.fake, "GET", "/approvals"),
        1,
        "no approvals, no settings read"
    );
    // The author approving their own merge request is reported; the bot refuses it.
    w.fake.approve(w.project, w.iid, "alice");
    w.fake.approve(w.project, w.iid, "bob");
    let approvers = project.approvers(PATH, w.iid, &cr).await.unwrap();
    let logins: Vec<_> = approvers.iter().map(|a| a.actor.login.as_str()).collect();
    assert_eq!(logins, ["alice", "bob"]);
    assert_eq!(approvers[1].actor.id, Some(w.fake.user("bob")));
    // The display name too: commits name people by it.
    assert_eq!(approvers[1].name.as_deref(), Some("bob"));
    assert!(
        approvers
            .iter()
            .all(|a| a.commit.as_deref() == Some(cr.head_sha.as_str()))
    );

    w.fake.set_reset_approvals_on_push(w.project, false);
    let approvers = project.approvers(PATH, w.iid, &cr).await.unwrap();
    assert!(approvers.iter().all(|a| a.commit.is_none()));
    // With resets off, a push keeps the approvals (and they still carry no commit).
    w.fake.push(
        w.project,
        w.iid,
        &"c".repeat(40),
        vec![DiffFile::modified("x.hcl")],
    );
    assert_eq!(project.approvers(PATH, w.iid, &cr).await.unwrap().len(), 2);
    w.fake.set_reset_approvals_on_push(w.project, true);
    w.fake.push(w.project, w.iid, &"d".repeat(40), vec![]);
    assert!(
        project
            .approvers(PATH, w.iid, &cr)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn eyes_are_awarded_once() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    let note = w
        .fake
        .user_note(w.project, w.iid, "bob", "cascade apply 3f9a");
    project.acknowledge(PATH, w.iid, note.id).await.unwrap();
    project.acknowledge(PATH, w.iid, note.id).await.unwrap();
    assert_eq!(
        w.fake.awards(note.id),
        vec![(BOT_USERNAME.to_string(), "eyes".to_string())]
    );
    assert!(project.acknowledge(PATH, w.iid, 999_999).await.is_err());
}

#[tokio::test]
async fn a_429_waits_for_retry_after_then_for_ratelimit_reset() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    w.fake
        .fail_next("merge_requests.get", Failure::retry_after(1));
    let started = Instant::now();
    project.change_request(PATH, w.iid).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(w.gitlab.rate_limit_waits(), 1);

    w.fake.fail_next("notes.list", Failure::ratelimit_reset(2));
    let started = Instant::now();
    project.own_comments(PATH, w.iid).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(w.gitlab.rate_limit_waits(), 2);

    // Longer than cascade waits: an error at once, saying so.
    w.fake
        .fail_next("merge_requests.get", Failure::retry_after(3600));
    let started = Instant::now();
    let err = project.change_request(PATH, w.iid).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(err.downcast_ref::<ApiError>().map(|e| e.status), Some(429));
    assert!(format!("{err:#}").contains("rate limit"), "{err:#}");
}

#[tokio::test]
async fn server_errors_are_retried_a_bounded_number_of_times() {
    let w = world().await;
    let project = w.gitlab.project(w.project);
    w.fake.fail_next("merge_requests.get", Failure::status(502));
    w.fake.fail_next("merge_requests.get", Failure::status(503));
    project.change_request(PATH, w.iid).await.unwrap();
    for _ in 0..4 {
        w.fake.fail_next("merge_requests.get", Failure::status(500));
    }
    let err = project.change_request(PATH, w.iid).await.unwrap_err();
    assert_eq!(err.downcast_ref::<ApiError>().map(|e| e.status), Some(500));
    assert_eq!(
        count(&w.fake, "GET", &format!("/merge_requests/{}", w.iid)),
        3 + 4
    );
}

#[tokio::test]
async fn the_fake_addresses_projects_by_encoded_path_and_pages_diffs() {
    let w = world().await;
    let files: Vec<DiffFile> = (0..45)
        .map(|i| DiffFile::modified(&format!("live/u{i}/terragrunt.hcl")))
        .collect();
    w.fake.push(w.project, w.iid, &"e".repeat(40), files);
    let client = reqwest::Client::new();
    let get = |url: String| client.get(url).header("PRIVATE-TOKEN", TOKEN).send();
    let by_path: serde_json::Value = get(format!(
        "{}/api/v4/projects/acme%2Fplatform%2Finfra",
        w.fake.url()
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(by_path["id"], w.project);
    assert_eq!(by_path["path_with_namespace"], PATH);
    let page = get(format!(
        "{}/api/v4/projects/{}/merge_requests/{}/diffs?per_page=20&page=3",
        w.fake.url(),
        w.project,
        w.iid
    ))
    .await
    .unwrap();
    assert_eq!(page.headers()["x-total"], "45");
    assert_eq!(page.headers()["x-next-page"], "");
    let items: Vec<serde_json::Value> = page.json().await.unwrap();
    assert_eq!(items.len(), 5);
    let anonymous = reqwest::get(format!("{}/api/v4/projects/{}", w.fake.url(), w.project))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let body: serde_json::Value = anonymous.json().await.unwrap();
    assert_eq!(body["message"], "401 Unauthorized");
}

mod drift_issues {
    //! What a drift run needs: the default branch and its head, and the one issue per
    //! project (created, edited, closed, reopened, read back, notes, 👀).

    use super::*;
    use cascade::event::{Event, parse_gitlab_event};
    use cascade::forge::{Forge, TooLong};
    use support::git;

    /// A bare origin with `main` and `release/2026-q1` one commit apart.
    fn origin() -> (tempfile::TempDir, std::path::PathBuf, String, String) {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        std::fs::create_dir(&work).unwrap();
        git(&work, &["init", "-q"]);
        std::fs::write(work.join("main.tf"), "# one\n").unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-qm", "one"]);
        let main = git(&work, &["rev-parse", "HEAD"]);
        git(&work, &["checkout", "-qb", "release/2026-q1"]);
        std::fs::write(work.join("main.tf"), "# two\n").unwrap();
        git(&work, &["commit", "-qam", "two"]);
        let release = git(&work, &["rev-parse", "HEAD"]);
        let origin = tmp.path().join("infra.git");
        git(
            tmp.path(),
            &[
                "clone",
                "-q",
                "--bare",
                work.to_str().unwrap(),
                origin.to_str().unwrap(),
            ],
        );
        (tmp, origin, main, release)
    }

    fn forge(w: &World) -> Forge {
        Forge::GitLab(w.gitlab.project(w.project))
    }

    #[tokio::test]
    async fn the_default_branch_and_its_head_are_read_now() {
        let (_tmp, origin, main, release) = origin();
        let fake = FakeGitLab::start().await;
        let project = fake.add_project(PATH, Some(&origin));
        let gitlab = quick(GitLab::builder(&fake.url(), TOKEN)).build().unwrap();
        let forge = Forge::GitLab(gitlab.project(project));
        let branch = forge.default_branch(PATH).await.unwrap();
        assert_eq!(
            (branch.name.as_str(), branch.sha.as_str()),
            ("main", main.as_str())
        );
        assert_eq!(branch.clone_url.as_str(), fake.git_http_url(project));
        // A new default, with a slash in its name (one encoded path segment), is read
        // on the next call.
        fake.set_default_branch(project, Some("release/2026-q1"));
        let branch = forge.default_branch(PATH).await.unwrap();
        assert_eq!(
            (branch.name.as_str(), branch.sha),
            ("release/2026-q1", release)
        );
        assert!(
            fake.requests()
                .iter()
                .any(|r| r.path.ends_with("/repository/branches/release%2F2026-q1"))
        );
        // An empty repository has no default branch: said, with what to do.
        fake.set_default_branch(project, None);
        let text = format!("{:#}", forge.default_branch(PATH).await.unwrap_err());
        assert!(text.contains("no default branch"), "{text}");
        fake.set_default_branch(project, Some("trunk"));
        let text = format!("{:#}", forge.default_branch(PATH).await.unwrap_err());
        assert!(text.contains("404"), "{text}");
        assert_eq!(gitlab.write_calls(), 0, "reads are not writes");
    }

    #[tokio::test]
    async fn an_issue_is_created_edited_closed_reopened_and_read_back() {
        let w = world().await;
        let forge = forge(&w);
        // Issue iids count apart from merge requests' (the world has merge request !1).
        let n = forge
            .create_issue(PATH, "Drift detected", "`live/dev/vpc`: 1 to change")
            .await
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(w.iid, 1);
        let issue = w.fake.issue(w.project, n).unwrap();
        assert_eq!(
            (
                issue.author.as_str(),
                issue.title.as_str(),
                issue.state.as_str()
            ),
            (BOT_USERNAME, "Drift detected", "opened")
        );
        assert_eq!(forge.issue_open(PATH, n).await.unwrap(), Some(true));

        forge
            .edit_issue(PATH, n, "Drift detected (2 units)", "both")
            .await
            .unwrap();
        let issue = w.fake.issue(w.project, n).unwrap();
        assert_eq!(
            (issue.title.as_str(), issue.description.as_str()),
            ("Drift detected (2 units)", "both")
        );
        assert_eq!(issue.edits.len(), 1);

        forge.set_issue_open(PATH, n, false).await.unwrap();
        assert_eq!(w.fake.issue(w.project, n).unwrap().state, "closed");
        assert_eq!(forge.issue_open(PATH, n).await.unwrap(), Some(false));
        forge.set_issue_open(PATH, n, false).await.unwrap();
        assert_eq!(w.fake.issue(w.project, n).unwrap().state, "closed");
        forge.set_issue_open(PATH, n, true).await.unwrap();
        assert_eq!(w.fake.issue(w.project, n).unwrap().state, "opened");
        assert_eq!(forge.issue_open(PATH, n).await.unwrap(), Some(true));
        let puts = w
            .fake
            .requests()
            .iter()
            .filter(|r| r.method == "PUT" && r.path.ends_with(&format!("/issues/{n}")))
            .count();
        assert_eq!(puts, 4);
        assert_eq!(w.gitlab.write_calls(), 5, "one create, four updates");
    }

    #[tokio::test]
    async fn an_issue_that_is_not_here_is_none() {
        let w = world().await;
        let forge = forge(&w);
        assert_eq!(
            forge.issue_open(PATH, 99).await.unwrap(),
            None,
            "never was (404); merge request !1 is no issue"
        );
        assert_eq!(forge.issue_open(PATH, w.iid).await.unwrap(), None);
        let n = forge
            .create_issue(PATH, "Drift detected", "x")
            .await
            .unwrap();
        w.fake.move_issue(w.project, n);
        assert_eq!(forge.issue_open(PATH, n).await.unwrap(), None, "moved away");
        let n = forge
            .create_issue(PATH, "Drift detected", "y")
            .await
            .unwrap();
        w.fake.delete_issue(w.project, n);
        assert_eq!(forge.issue_open(PATH, n).await.unwrap(), None, "deleted");
        let error = forge.set_issue_open(PATH, n, false).await.unwrap_err();
        assert_eq!(error.downcast_ref::<ApiError>().unwrap().status, 404);
    }

    #[tokio::test]
    async fn notes_on_an_issue_are_posted_and_acknowledged_once() {
        let w = world().await;
        let forge = forge(&w);
        let n = forge
            .create_issue(PATH, "Drift detected", "plan")
            .await
            .unwrap();
        let command = w
            .fake
            .user_issue_note(w.project, n, "bob", "cascade apply 3f9a2c1b7d4e");
        forge
            .acknowledge_issue_comment(PATH, n, command.id)
            .await
            .unwrap();
        forge
            .acknowledge_issue_comment(PATH, n, command.id)
            .await
            .unwrap();
        assert_eq!(
            w.fake.awards(command.id),
            [(BOT_USERNAME.to_string(), "eyes".to_string())]
        );
        let reply = forge.comment_on_issue(PATH, n, "Applied.").await.unwrap();
        let notes = w.fake.issue(w.project, n).unwrap().notes;
        let seen: Vec<_> = notes
            .iter()
            .map(|note| (note.id, note.author.as_str(), note.body.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (command.id, "bob", "cascade apply 3f9a2c1b7d4e"),
                (reply, BOT_USERNAME, "Applied.")
            ]
        );
        // Issue notes are the issue's: the merge request with the same iid has none.
        assert!(w.fake.notes(w.project, w.iid).is_empty());
        assert!(
            w.fake
                .requests()
                .iter()
                .all(|r| !r.path.contains("/merge_requests/"))
        );

        // The Note Hook for it has GitLab's shape and parses as an issue note.
        let hook = w.fake.issue_note_event(&command);
        assert_eq!(hook.event, "Note Hook");
        let payload = hook.payload();
        assert_eq!(payload["object_attributes"]["noteable_type"], "Issue");
        assert_eq!(payload["issue"]["iid"], n);
        assert!(payload.get("merge_request").is_none());
        let Ok(Event::GitLabIssueNote(event)) = parse_gitlab_event(&hook.event, &hook.body) else {
            panic!("not an issue note");
        };
        assert_eq!(
            (event.issue.iid, event.note.id, event.note.body.as_str()),
            (n, command.id, "cascade apply 3f9a2c1b7d4e")
        );
        assert_eq!(event.user.username, "bob");
        assert_eq!(event.user.id, Some(w.fake.user("bob")));
        assert_eq!(event.project.id, w.project);
    }

    #[tokio::test]
    async fn too_long_is_refused_before_any_request() {
        let w = world().await;
        let forge = forge(&w);
        assert_eq!(
            (forge.issue_title_limit(), forge.comment_limit()),
            (255, 1_000_000)
        );
        let n = forge
            .create_issue(PATH, &"t".repeat(255), "ok")
            .await
            .unwrap();
        let requests = w.fake.requests().len();
        let refusals = [
            forge
                .create_issue(PATH, &"t".repeat(256), "b")
                .await
                .unwrap_err(),
            forge
                .create_issue(PATH, "t", &"b".repeat(1_000_001))
                .await
                .unwrap_err(),
            forge
                .edit_issue(PATH, n, &"t".repeat(256), "b")
                .await
                .unwrap_err(),
            forge
                .comment_on_issue(PATH, n, &"c".repeat(1_000_001))
                .await
                .unwrap_err(),
        ];
        let fields: Vec<_> = refusals
            .iter()
            .map(|e| e.downcast_ref::<TooLong>().expect("TooLong").field)
            .collect();
        assert_eq!(fields, ["title", "body", "title", "comment"]);
        assert_eq!(w.fake.requests().len(), requests, "nothing was sent");
        forge
            .comment_on_issue(PATH, n, &"c".repeat(1_000_000))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn an_issue_or_note_gitlab_stored_before_failing_is_not_made_twice() {
        let w = world().await;
        let forge = forge(&w);
        w.fake
            .open_issue(w.project, "bob", "Drift detected", "a user's copy");
        w.fake
            .fail_next_after_storing("issues.create", Failure::status(502));
        let n = forge
            .create_issue(PATH, "Drift detected", "plan")
            .await
            .unwrap();
        let ours: Vec<_> = w
            .fake
            .issues(w.project)
            .into_iter()
            .filter(|i| i.author == BOT_USERNAME)
            .collect();
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].iid, n);
        w.fake
            .fail_next_after_storing("issues.notes.create", Failure::status(502));
        let note = forge.comment_on_issue(PATH, n, "Applied.").await.unwrap();
        let notes = w.fake.issue(w.project, n).unwrap().notes;
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].id, note);
        // A 502 that stored nothing is looked for, then sent again.
        w.fake.fail_next("issues.create", Failure::status(502));
        let again = forge
            .create_issue(PATH, "Drift detected", "plan 2")
            .await
            .unwrap();
        assert_eq!(
            w.fake.issue(w.project, again).unwrap().description,
            "plan 2"
        );
        assert_eq!(count(&w.fake, "POST", "/issues"), 3);
    }
}

mod git_over_http {
    use super::*;
    use base64::Engine as _;
    use cascade::forge::{CloneUrl, Forge, GitCredential, GitOrigin};
    use cascade::workspace::Workspaces;
    use support::git;

    /// A bare origin with one commit on `main`; returns (tempdir, origin, sha).
    fn origin() -> (tempfile::TempDir, std::path::PathBuf, String) {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        std::fs::create_dir(&work).unwrap();
        git(&work, &["init", "-q"]);
        std::fs::write(work.join("main.tf"), "# hello\n").unwrap();
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-qm", "first"]);
        let sha = git(&work, &["rev-parse", "HEAD"]);
        let origin = tmp.path().join("infra.git");
        git(
            tmp.path(),
            &[
                "clone",
                "-q",
                "--bare",
                work.to_str().unwrap(),
                origin.to_str().unwrap(),
            ],
        );
        (tmp, origin, sha)
    }

    fn clone(url: &str, dest: &std::path::Path, header: Option<String>) -> std::process::Output {
        let mut command = std::process::Command::new("git");
        if let Some(header) = header {
            command.args(["-c", &format!("http.extraHeader={header}")]);
        }
        command
            .args(["clone", "-q", url])
            .arg(dest)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "/bin/false")
            .output()
            .unwrap()
    }

    #[tokio::test]
    async fn cloning_needs_the_token_as_basic_credentials() {
        let (tmp, origin, sha) = origin();
        let fake = FakeGitLab::start().await;
        let project = fake.add_project(PATH, Some(&origin));
        let iid = fake.open_merge_request(
            project,
            MrSpec {
                head_sha: sha.clone(),
                ..MrSpec::default()
            },
        );
        let url = fake.git_http_url(project);
        assert!(url.ends_with("/acme/platform/infra.git"), "{url}");

        let refused = tokio::task::spawn_blocking({
            let (url, dest) = (url.clone(), tmp.path().join("refused"));
            move || clone(&url, &dest, None)
        })
        .await
        .unwrap();
        assert!(!refused.status.success());
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("anyone:{TOKEN}"));
        let cloned = tokio::task::spawn_blocking({
            let (url, dest) = (url.clone(), tmp.path().join("cloned"));
            move || clone(&url, &dest, Some(format!("Authorization: Basic {basic}")))
        })
        .await
        .unwrap();
        assert!(
            cloned.status.success(),
            "{}",
            String::from_utf8_lossy(&cloned.stderr)
        );
        assert_eq!(git(&tmp.path().join("cloned"), &["rev-parse", "HEAD"]), sha);

        let git_requests: Vec<_> = fake
            .requests()
            .into_iter()
            .filter(|r| r.path.contains(".git/"))
            .collect();
        assert!(git_requests.iter().any(|r| !r.authorized));
        assert!(
            git_requests
                .iter()
                .any(|r| r.authorized && r.path.ends_with("/git-upload-pack"))
        );
        assert!(git_requests.iter().all(
            |r| !r.path.contains(TOKEN) && !r.query.clone().unwrap_or_default().contains(TOKEN)
        ));

        // cascade's own fetch, from the clone URL the API answers and with the token from
        // the client, gets the merge request head.
        let gitlab = GitLab::new(&fake.url(), TOKEN).unwrap();
        let forge = Forge::GitLab(gitlab.project(project));
        let credential = forge.git_credential().await.unwrap();
        let from = forge.default_branch(PATH).await.unwrap().clone_url;
        assert_eq!(from.as_str(), url);
        let head_ref = gitlab.project(project).fork_head_ref(iid);
        let workspaces = Workspaces::new(tmp.path().join("workspaces"));
        let mirror = workspaces
            .fetch(
                "acme/infra",
                &from,
                Some(&credential),
                &[head_ref.clone(), "main".to_string()],
            )
            .await
            .unwrap();
        assert_eq!(git(&mirror, &["rev-parse", &head_ref]), sha);
        let wrong = GitCredential::new(gitlab.origin().clone(), "glpat-not-the-right-token");
        let err = workspaces
            .fetch("acme/infra", &from, Some(&wrong), &[head_ref])
            .await
            .unwrap_err();
        assert!(
            !format!("{err:#}").contains("glpat-not-the-right-token"),
            "{err:#}"
        );
    }

    /// The token goes to the configured GitLab only: a project URL at another origin is
    /// refused before git starts, and a redirect from GitLab to another origin is not
    /// followed, so the stranger's listener never sees a request with credentials.
    #[tokio::test]
    async fn the_token_never_reaches_another_origin() {
        let (tmp, origin, _sha) = origin();
        let fake = FakeGitLab::start().await;
        let project = fake.add_project(PATH, Some(&origin));
        let gitlab = GitLab::new(&fake.url(), TOKEN).unwrap();
        let credential = Forge::GitLab(gitlab.project(project))
            .git_credential()
            .await
            .unwrap();
        let workspaces = Workspaces::new(tmp.path().join("workspaces"));
        let stranger = support::recorder::Recorder::not_found();
        // The API answering a clone URL elsewhere is refused by the origin...
        let elsewhere = format!("{}/{PATH}.git", stranger.url);
        let err = gitlab.origin().clone_url(&elsewhere).unwrap_err();
        assert!(format!("{err:#}").contains(&fake.url()), "{err:#}");
        // ...and a clone URL of another origin never gets this credential.
        let foreign = GitOrigin::for_gitlab(&stranger.url)
            .unwrap()
            .clone_url(&elsewhere)
            .unwrap();
        let err = fetch_error(&workspaces, &foreign, &credential).await;
        assert!(err.contains("sends a forge's token nowhere else"), "{err}");
        assert!(stranger.heads().is_empty(), "{:?}", stranger.heads());
        // A redirect at the configured origin is not followed with the header.
        let redirecting = support::recorder::Recorder::redirecting_to(&stranger.url);
        let gitlab = GitLab::new(&redirecting.url, TOKEN).unwrap();
        let credential = gitlab.project(project).git_credential().await.unwrap();
        let from = gitlab
            .origin()
            .clone_url(&format!("{}/{PATH}.git", redirecting.url))
            .unwrap();
        let err = fetch_error(&workspaces, &from, &credential).await;
        assert!(err.contains("cannot fetch acme/infra"), "{err}");
        assert!(redirecting.saw_credentials(), "{:?}", redirecting.heads());
        assert!(stranger.heads().is_empty(), "{:?}", stranger.heads());
    }

    /// How fetching `main` of `from` with `credential` failed.
    async fn fetch_error(ws: &Workspaces, from: &CloneUrl, credential: &GitCredential) -> String {
        let refs = ["main".to_string()];
        let err = ws
            .fetch("acme/infra", from, Some(credential), &refs)
            .await
            .unwrap_err();
        format!("{err:#}")
    }
}

mod webhooks {
    use super::*;
    use serde_json::Value;
    use support::fake_gitlab::standard_webhooks_signature;

    fn sample(name: &str) -> Value {
        let path = support::shared().join("webhooks/gitlab").join(name);
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
    }

    /// Every key of `real` at `pointer` is in `built` there too.
    fn has_keys_of(built: &Value, real: &Value, pointer: &str) {
        let keys = |v: &Value| -> Vec<String> {
            v.pointer(pointer)
                .and_then(Value::as_object)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        let built_keys = keys(built);
        let missing: Vec<_> = keys(real)
            .into_iter()
            .filter(|k| !built_keys.contains(k))
            .collect();
        assert!(missing.is_empty(), "{pointer} lacks {missing:?}");
    }

    #[tokio::test]
    async fn deliveries_have_gitlab_s_shapes_and_headers() {
        let w = world().await;
        let open = w.fake.merge_request_event(w.project, w.iid, "open");
        assert_eq!(open.event, "Merge Request Hook");
        let real = sample("merge_request.open.json");
        for pointer in [
            "",
            "/object_attributes",
            "/project",
            "/object_attributes/last_commit",
        ] {
            has_keys_of(&open.payload(), &real, pointer);
        }
        assert_eq!(open.payload()["project"]["path_with_namespace"], PATH);
        assert_eq!(open.payload()["object_attributes"]["iid"], w.iid);
        assert!(open.payload()["object_attributes"].get("oldrev").is_none());

        w.fake.push(w.project, w.iid, &"c".repeat(40), vec![]);
        let pushed = w.fake.merge_request_pushed_event(w.project, w.iid);
        let real = sample("merge_request.update.new-commit.json");
        has_keys_of(&pushed.payload(), &real, "/object_attributes");
        assert_eq!(
            pushed.payload()["object_attributes"]["oldrev"],
            "a".repeat(40)
        );
        assert_eq!(
            pushed.payload()["object_attributes"]["last_commit"]["id"],
            "c".repeat(40)
        );

        let ready = w.fake.merge_request_ready_event(w.project, w.iid);
        assert_eq!(ready.payload()["changes"]["draft"]["current"], false);

        let note = w.fake.user_note(w.project, w.iid, "bob", "cascade plan");
        let hook = w.fake.note_event(&note);
        assert_eq!(hook.event, "Note Hook");
        let real = sample("note.merge_request.json");
        for pointer in ["", "/object_attributes", "/merge_request"] {
            has_keys_of(&hook.payload(), &real, pointer);
        }
        assert_eq!(hook.payload()["object_attributes"]["note"], "cascade plan");
        assert_eq!(
            hook.payload()["object_attributes"]["author_id"],
            w.fake.user("bob")
        );

        let headers = hook.headers();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header("x-gitlab-token"), Some(w.fake.webhook_secret()));
        assert_eq!(header("x-gitlab-event").as_deref(), Some("Note Hook"));
        assert!(header("idempotency-key").is_some() && header("x-gitlab-event-uuid").is_some());
        assert!(header("webhook-signature").is_none());
        // A retry keeps the key; a new delivery gets a new one.
        assert_eq!(hook.redelivered().idempotency_key, hook.idempotency_key);
        assert_ne!(hook.renewed().idempotency_key, hook.idempotency_key);
    }

    #[tokio::test]
    async fn signed_deliveries_follow_standard_webhooks() {
        // The Standard Webhooks specification's own example.
        assert_eq!(
            standard_webhooks_signature(
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1_614_265_330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let w = world().await;
        let token = support::fake_gitlab::signing_token();
        w.fake.set_signing_token(Some(&token));
        let delivery = w.fake.merge_request_event(w.project, w.iid, "close");
        let headers = delivery.headers();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(header("webhook-id"), header("idempotency-key"));
        let expected = standard_webhooks_signature(
            &token,
            &header("webhook-id"),
            header("webhook-timestamp").parse().unwrap(),
            &delivery.body,
        );
        assert_eq!(header("webhook-signature"), expected);
    }
}

#[tokio::test]
async fn a_merge_requests_commits_are_read_across_pages_as_written() {
    const T: &str = "t <t@example.com>";
    let mut people = vec![("Carol Émile <carol@example.com>", T)];
    people.extend(std::iter::repeat_n((T, T), 104));
    let (_tmp, origin, base, head) = support::origin_with_commits(&people);
    let fake = FakeGitLab::start().await;
    let project = fake.add_project(PATH, Some(&origin));
    let iid = fake.open_merge_request(
        project,
        MrSpec {
            base_sha: base,
            head_sha: head.clone(),
            ..MrSpec::default()
        },
    );
    let gitlab = quick(GitLab::builder(&fake.url(), TOKEN)).build().unwrap();
    let commits = gitlab.project(project).commits(PATH, iid).await.unwrap();
    assert_eq!(commits.len(), 105);
    assert_eq!(commits[0].sha, head, "newest first, as GitLab lists them");
    let written = |name: &str, email: &str| CommitPerson::Written {
        name: name.into(),
        email: email.into(),
    };
    assert_eq!(
        commits.last().unwrap().people,
        [
            written("Carol Émile", "carol@example.com"),
            written("t", "t@example.com")
        ]
    );
    assert_eq!(commits[0].people, [written("t", "t@example.com")]);
    assert_eq!(
        count(&fake, "GET", &format!("/merge_requests/{iid}/commits")),
        2
    );
    // Unreadable is an error naming the merge request, never an empty list.
    fake.fail_next("merge_requests.commits", Failure::status(404));
    let text = format!(
        "{:#}",
        gitlab
            .project(project)
            .commits(PATH, iid)
            .await
            .unwrap_err()
    );
    assert!(text.contains("could not read the commits of"), "{text}");
}
