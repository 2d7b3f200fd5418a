//! cascade's GitHub client against the stateful fake GitHub: authentication,
//! every endpoint cascade uses, pagination and caps, and how it behaves when
//! GitHub pushes back (rate limits, server errors, the write budget).

use crate::support::fake_github;

use std::time::{Duration, Instant};

use cascade::forge::github::{
    ApiError, CheckOutput, CheckStatus, GitHubApp, GitHubAppBuilder, Permission,
};
use fake_github::{APP_ID, BOT_LOGIN, Failure, FakeGitHub, FileChange, PrSpec, app_key};
use metrics_exporter_prometheus::PrometheusHandle;

const REPO: &str = "acme/infra";
const INSTALLATION: u64 = 77;

/// The process's metrics: the servers other tests run in this process record into the
/// same recorder, so this is cascade's, never one installed here.
fn metrics() -> PrometheusHandle {
    cascade::server::metrics_handle()
}

/// Test-sized waits: real ones would be a minute.
fn quick(builder: GitHubAppBuilder) -> GitHubAppBuilder {
    builder
        .max_wait(Duration::from_secs(5))
        .secondary_backoff(Duration::from_millis(20))
        .server_error_backoff(Duration::from_millis(10))
}

async fn github() -> FakeGitHub {
    metrics();
    let fake = FakeGitHub::start().await;
    fake.add_installation(INSTALLATION, "acme");
    fake.add_repo(REPO, None);
    fake
}

async fn setup() -> (FakeGitHub, GitHubApp) {
    let fake = github().await;
    let app = quick(GitHubApp::builder(&fake.url(), APP_ID, &app_key()))
        .build()
        .unwrap();
    (fake, app)
}

fn count(fake: &FakeGitHub, method: &str, path: &str) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == method && r.path == path)
        .count()
}

fn files(n: usize) -> Vec<FileChange> {
    (0..n)
        .map(|i| FileChange::modified(&format!("live/u{i:04}/terragrunt.hcl")))
        .collect()
}

#[tokio::test]
async fn a_token_is_minted_once_and_reused() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    gh.pull_request(REPO, n).await.unwrap();
    gh.comments(REPO, n).await.unwrap();
    gh.create_comment(REPO, n, "plan").await.unwrap();
    let token = app.installation_token(INSTALLATION).await.unwrap();
    assert!(token.starts_with("ghs_"));
    assert_eq!(fake.tokens_minted(INSTALLATION), 1);
    let first = &fake.requests()[0];
    assert_eq!(
        (first.method.as_str(), first.path.as_str()),
        ("POST", "/app/installations/77/access_tokens")
    );
}

#[tokio::test]
async fn a_token_is_refreshed_five_minutes_before_it_expires() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    // Four minutes of life is inside the five-minute margin: every use re-mints.
    fake.set_token_lifetime(Duration::from_secs(4 * 60));
    gh.pull_request(REPO, n).await.unwrap();
    gh.pull_request(REPO, n).await.unwrap();
    assert_eq!(fake.tokens_minted(INSTALLATION), 2);
    fake.set_token_lifetime(Duration::from_secs(3600));
    gh.pull_request(REPO, n).await.unwrap();
    gh.pull_request(REPO, n).await.unwrap();
    assert_eq!(fake.tokens_minted(INSTALLATION), 3);
}

#[tokio::test]
async fn a_revoked_token_is_replaced_and_the_call_repeated() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    gh.pull_request(REPO, n).await.unwrap();
    fake.expire_tokens();
    let pr = gh.pull_request(REPO, n).await.unwrap();
    assert_eq!(pr.number, n);
    assert_eq!(fake.tokens_minted(INSTALLATION), 2);
}

#[tokio::test]
async fn a_bad_private_key_is_a_clear_error() {
    let fake = github().await;
    let error = GitHubApp::new(&fake.url(), APP_ID, b"not a key")
        .err()
        .unwrap();
    let text = format!("{error:#}");
    assert!(
        text.contains("private key is not an RSA key in PEM form"),
        "{text}"
    );
}

#[tokio::test]
async fn an_unknown_installation_says_which_and_why() {
    let (_fake, app) = setup().await;
    let gh = app.installation(999).await.unwrap();
    let text = format!("{:#}", gh.pull_request(REPO, 1).await.unwrap_err());
    assert!(text.contains("installation 999"), "{text}");
    assert!(text.contains("HTTP 404"), "{text}");
}

#[tokio::test]
async fn pull_request_info_reads_heads_state_and_forks() {
    let (fake, app) = setup().await;
    let gh = app.installation(INSTALLATION).await.unwrap();
    let own = fake.open_pull_request(
        REPO,
        PrSpec {
            head_sha: "c".repeat(40),
            draft: true,
            mergeable: None,
            mergeable_state: "unknown".into(),
            ..PrSpec::default()
        },
    );
    let fork = fake.open_pull_request(
        REPO,
        PrSpec {
            author: "mallory".into(),
            fork: true,
            ..PrSpec::default()
        },
    );
    let pr = gh.pull_request(REPO, own).await.unwrap();
    assert_eq!(
        (
            pr.head_sha.as_str(),
            pr.head_ref.as_str(),
            pr.base_ref.as_str()
        ),
        (&*"c".repeat(40), "feature", "main")
    );
    assert_eq!(pr.base_sha, "b".repeat(40));
    assert!(pr.draft && !pr.fork && !pr.merged);
    assert_eq!(
        (pr.mergeable, pr.mergeable_state.as_str()),
        (None, "unknown")
    );
    assert_eq!((pr.author.as_str(), pr.state.as_str()), ("alice", "open"));

    let pr = gh.pull_request(REPO, fork).await.unwrap();
    assert!(pr.fork);
    assert_eq!(pr.author, "mallory");

    fake.close_pull_request(REPO, own, true);
    let pr = gh.pull_request(REPO, own).await.unwrap();
    assert_eq!((pr.state.as_str(), pr.merged), ("closed", true));
}

#[tokio::test]
async fn files_are_read_across_pages() {
    let (fake, app) = setup().await;
    let mut changed = files(249);
    changed.push(FileChange::renamed(
        "live/old/terragrunt.hcl",
        "live/new/terragrunt.hcl",
    ));
    let n = fake.open_pull_request(
        REPO,
        PrSpec {
            files: changed,
            ..PrSpec::default()
        },
    );
    let gh = app.installation(INSTALLATION).await.unwrap();
    let got = gh.pull_request_files(REPO, n).await.unwrap().unwrap();
    assert_eq!(got.len(), 250);
    assert_eq!(count(&fake, "GET", "/repos/acme/infra/pulls/1/files"), 3);
    let renamed = got.last().unwrap();
    assert_eq!(renamed.path, "live/new/terragrunt.hcl");
    assert_eq!(
        renamed.previous_path.as_deref(),
        Some("live/old/terragrunt.hcl")
    );
    assert_eq!(renamed.status, "renamed");
    assert_eq!(got[0].status, "modified");
}

#[tokio::test]
async fn more_files_than_githubs_cap_means_none() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(
        REPO,
        PrSpec {
            files: files(3500),
            ..PrSpec::default()
        },
    );
    let gh = app.installation(INSTALLATION).await.unwrap();
    assert_eq!(gh.pull_request_files(REPO, n).await.unwrap(), None);
    assert_eq!(count(&fake, "GET", "/repos/acme/infra/pulls/1/files"), 30);
}

#[tokio::test]
async fn comments_are_created_edited_and_listed() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    let user = fake.user_comment(REPO, n, "bob", "/plan");
    let plan = gh.create_comment(REPO, n, "plan v1").await.unwrap();
    assert_eq!(
        (plan.author.as_str(), plan.body.as_str()),
        (BOT_LOGIN, "plan v1")
    );
    assert!(!plan.node_id.is_empty());
    assert_eq!(plan.via_app, Some(APP_ID));
    gh.update_comment(REPO, plan.id, "plan v2").await.unwrap();

    let listed = gh.comments(REPO, n).await.unwrap();
    let seen: Vec<_> = listed
        .iter()
        .map(|c| (c.id, c.author.as_str(), c.body.as_str()))
        .collect();
    assert_eq!(
        seen,
        [(user.id, "bob", "/plan"), (plan.id, BOT_LOGIN, "plan v2")]
    );
    let bot = fake.bot_comments(REPO, n);
    assert_eq!(bot[0].edits, ["plan v1"]);
    assert_eq!(
        listed[0].via_app, None,
        "a user's comment was posted by no App"
    );

    gh.delete_comment(REPO, plan.id).await.unwrap();
    assert!(fake.bot_comments(REPO, n).is_empty());
    // Already gone: nothing to do.
    gh.delete_comment(REPO, plan.id).await.unwrap();
    // A user's comment is not the App's to delete.
    let refused = gh.delete_comment(REPO, user.id).await.unwrap_err();
    assert_eq!(refused.downcast_ref::<ApiError>().unwrap().status, 403);
}

#[tokio::test]
async fn a_comment_github_stored_before_failing_is_not_posted_twice() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    gh.create_comment(REPO, n, "an earlier reply")
        .await
        .unwrap();
    fake.fail_next_after_storing("issues.comments.create", Failure::status(502));
    let posted = gh.create_comment(REPO, n, "the plan").await.unwrap();
    let bot = fake.bot_comments(REPO, n);
    let bodies: Vec<&str> = bot.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(bodies, ["an earlier reply", "the plan"]);
    assert_eq!(posted.id, bot[1].id);
    assert_eq!(
        count(&fake, "POST", "/repos/acme/infra/issues/1/comments"),
        2
    );
    // A 502 that stored nothing: looked for, then sent again. The same text posted
    // earlier (more than GitHub's one-second timestamps apart) is not taken for it.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    fake.fail_next("issues.comments.create", Failure::status(502));
    gh.create_comment(REPO, n, "the plan").await.unwrap();
    assert_eq!(fake.bot_comments(REPO, n).len(), 3);
    assert_eq!(
        count(&fake, "POST", "/repos/acme/infra/issues/1/comments"),
        4
    );
}

#[tokio::test]
async fn team_membership_is_active_members_only_and_needs_the_members_permission() {
    let (fake, app) = setup().await;
    let gh = app.installation(INSTALLATION).await.unwrap();
    fake.add_team_member("acme", "platform", "carol");
    fake.invite_team_member("acme", "platform", "dave");
    // Without Organization → Members, GitHub refuses: an error, never "not a member".
    let refused = gh
        .is_team_member("acme", "platform", "carol")
        .await
        .unwrap_err();
    assert_eq!(refused.downcast_ref::<ApiError>().unwrap().status, 403);
    fake.set_app_permission(INSTALLATION, "members", Some("read"));
    assert!(
        gh.is_team_member("acme", "platform", "carol")
            .await
            .unwrap()
    );
    assert!(!gh.is_team_member("acme", "platform", "dave").await.unwrap());
    assert!(!gh.is_team_member("acme", "platform", "eve").await.unwrap());
    assert!(!gh.is_team_member("acme", "nobody", "carol").await.unwrap());
    assert!(
        !gh.is_team_member("other", "platform", "carol")
            .await
            .unwrap()
    );
    assert!(count(&fake, "GET", "/orgs/acme/teams/platform/memberships/carol") >= 2);
}

#[tokio::test]
async fn comments_are_read_across_pages() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    for i in 0..150 {
        fake.user_comment(REPO, n, "bob", &format!("comment {i}"));
    }
    let gh = app.installation(INSTALLATION).await.unwrap();
    let listed = gh.comments(REPO, n).await.unwrap();
    assert_eq!(listed.len(), 150);
    assert_eq!(listed[149].body, "comment 149");
    assert_eq!(
        count(&fake, "GET", "/repos/acme/infra/issues/1/comments"),
        2
    );
}

#[tokio::test]
async fn a_comment_is_minimized_as_outdated() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    let old = gh.create_comment(REPO, n, "old plan").await.unwrap();
    gh.minimize_comment(&old.node_id).await.unwrap();
    let bot = fake.bot_comments(REPO, n);
    assert!(bot[0].minimized);
    assert_eq!(bot[0].minimized_reason.as_deref(), Some("OUTDATED"));

    let text = format!("{:#}", gh.minimize_comment("IC_nope").await.unwrap_err());
    assert!(text.contains("Could not resolve to a node"), "{text}");
}

#[tokio::test]
async fn a_check_run_is_created_then_completed() {
    let (fake, app) = setup().await;
    let sha = "a".repeat(40);
    fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    let id = gh
        .create_check_run(
            REPO,
            &sha,
            &CheckOutput::new(CheckStatus::InProgress, "Planning", "3 units"),
        )
        .await
        .unwrap();
    let huge = "x".repeat(70_000);
    gh.update_check_run(
        REPO,
        id,
        &CheckOutput::new(CheckStatus::Success, "Planned", huge.as_str()),
    )
    .await
    .unwrap();
    let runs = fake.check_runs(REPO, &sha);
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].id, runs[0].name.as_str()), (id, "cascade"));
    let states: Vec<_> = runs[0]
        .history
        .iter()
        .map(|s| (s.status.as_str(), s.conclusion.as_deref(), s.title.as_str()))
        .collect();
    assert_eq!(
        states,
        [
            ("in_progress", None, "Planning"),
            ("completed", Some("success"), "Planned")
        ]
    );
    assert!(runs[0].current().summary.chars().count() <= 65_535);

    gh.update_check_run(
        REPO,
        id,
        &CheckOutput::new(CheckStatus::ActionRequired, "Apply?", "s"),
    )
    .await
    .unwrap();
    let now = fake.check_runs(REPO, &sha)[0].current().clone();
    assert_eq!(now.conclusion.as_deref(), Some("action_required"));
}

#[tokio::test]
async fn permission_reads_roles_and_fails_closed() {
    let (fake, app) = setup().await;
    let gh = app.installation(INSTALLATION).await.unwrap();
    fake.set_permission(REPO, "bob", "write");
    fake.set_permission(REPO, "carol", "maintain");
    fake.set_permission(REPO, "dave", "none");
    assert_eq!(gh.permission(REPO, "bob").await, Permission::Write);
    assert!(gh.permission(REPO, "carol").await.can_write());
    assert_eq!(gh.permission(REPO, "carol").await, Permission::Maintain);
    assert_eq!(gh.permission(REPO, "eve").await, Permission::Read);
    assert!(!gh.permission(REPO, "eve").await.can_write());
    assert_eq!(gh.permission(REPO, "dave").await, Permission::None);
    // Errors, never a guess: an unknown repository and a broken GitHub.
    assert_eq!(gh.permission("acme/other", "bob").await, Permission::None);
    for _ in 0..4 {
        fake.fail_next("collaborators.permission", Failure::status(500));
    }
    assert_eq!(gh.permission(REPO, "bob").await, Permission::None);
}

#[tokio::test]
async fn reviews_are_listed_with_their_commit() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    fake.approve(REPO, n, "bob");
    fake.push(REPO, n, &"d".repeat(40), files(1));
    fake.review(REPO, n, "carol", "CHANGES_REQUESTED");
    let gh = app.installation(INSTALLATION).await.unwrap();
    let reviews = gh.reviews(REPO, n).await.unwrap();
    let seen: Vec<_> = reviews
        .iter()
        .map(|r| (r.author.as_str(), r.state.as_str(), r.commit_id.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            ("bob", "APPROVED", "a".repeat(40)),
            ("carol", "CHANGES_REQUESTED", "d".repeat(40))
        ]
    );
}

#[tokio::test]
async fn a_command_comment_gets_an_eyes_reaction() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let command = fake.user_comment(REPO, n, "bob", "/apply 3f9a2c1b7d4e");
    let gh = app.installation(INSTALLATION).await.unwrap();
    gh.react(REPO, command.id, "eyes").await.unwrap();
    assert_eq!(
        fake.reactions(command.id),
        [(BOT_LOGIN.to_string(), "eyes".to_string())]
    );
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    fake.fail_next("pulls.get", Failure::retry_after(1));
    let start = Instant::now();
    gh.pull_request(REPO, n).await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(count(&fake, "GET", "/repos/acme/infra/pulls/1"), 2);
    assert_eq!(app.rate_limit_waits(), 1);
    let rendered = metrics().render();
    assert!(
        rendered.contains("cascade_github_rate_limit_waits_total"),
        "{rendered}"
    );
    assert!(
        rendered.contains("cascade_github_calls_total{kind=\"pulls.get\"}"),
        "{rendered}"
    );
}

#[tokio::test]
async fn a_wait_longer_than_the_limit_fails_at_once() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    fake.fail_next("pulls.get", Failure::retry_after(120));
    let start = Instant::now();
    let text = format!("{:#}", gh.pull_request(REPO, n).await.unwrap_err());
    assert!(start.elapsed() < Duration::from_secs(1));
    assert!(
        text.contains("wait 120 s, longer than its limit of 5 s"),
        "{text}"
    );
    assert!(text.contains("HTTP 429"), "{text}");
    assert_eq!(count(&fake, "GET", "/repos/acme/infra/pulls/1"), 1);
}

#[tokio::test]
async fn the_primary_rate_limit_waits_for_the_reset() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    fake.fail_next("issues.comments.list", Failure::primary_rate_limit(2));
    let start = Instant::now();
    gh.comments(REPO, n).await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(app.rate_limit_waits(), 1);
}

#[tokio::test]
async fn a_secondary_rate_limit_backs_off_exponentially() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    fake.fail_next("issues.comments.create", Failure::secondary_rate_limit());
    fake.fail_next("issues.comments.create", Failure::secondary_rate_limit());
    let start = Instant::now();
    gh.create_comment(REPO, n, "plan").await.unwrap();
    // 20 ms, then 40 ms.
    assert!(
        start.elapsed() >= Duration::from_millis(60),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        count(&fake, "POST", "/repos/acme/infra/issues/1/comments"),
        3
    );
    assert_eq!(fake.bot_comments(REPO, n).len(), 1);
    assert_eq!(app.rate_limit_waits(), 2);

    for _ in 0..4 {
        fake.fail_next("issues.comments.create", Failure::secondary_rate_limit());
    }
    let text = format!(
        "{:#}",
        gh.create_comment(REPO, n, "plan").await.unwrap_err()
    );
    assert!(
        text.contains("gave up on issues.comments.create after 4 attempts"),
        "{text}"
    );
    assert!(text.contains("secondary rate limit"), "{text}");
}

#[tokio::test]
async fn server_errors_are_retried() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    fake.fail_next("pulls.reviews", Failure::status(502));
    fake.fail_next("pulls.reviews", Failure::status(503));
    assert!(gh.reviews(REPO, n).await.unwrap().is_empty());
    assert_eq!(count(&fake, "GET", "/repos/acme/infra/pulls/1/reviews"), 3);
    assert_eq!(app.rate_limit_waits(), 0);
}

#[tokio::test]
async fn not_found_is_not_retried_and_says_what_to_check() {
    let (fake, app) = setup().await;
    let gh = app.installation(INSTALLATION).await.unwrap();
    let error = gh.pull_request(REPO, 404).await.unwrap_err();
    let api = error.downcast_ref::<ApiError>().expect("an ApiError");
    assert_eq!((api.status, api.kind), (404, "pulls.get"));
    let text = format!("{error:#}");
    assert!(text.contains("GET /repos/acme/infra/pulls/404"), "{text}");
    assert!(text.contains("Not Found"), "{text}");
    assert!(
        text.contains("App is installed on the repository"),
        "{text}"
    );
    assert_eq!(count(&fake, "GET", "/repos/acme/infra/pulls/404"), 1);
}

#[tokio::test]
async fn a_too_long_comment_is_a_422_the_caller_can_branch_on() {
    let (fake, app) = setup().await;
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    let error = gh
        .create_comment(REPO, n, &"x".repeat(65_537))
        .await
        .unwrap_err();
    assert_eq!(error.downcast_ref::<ApiError>().unwrap().status, 422);
    assert!(format!("{error:#}").contains("Body is too long"));
}

#[tokio::test]
async fn writes_beyond_the_budget_wait() {
    let fake = github().await;
    let app = quick(GitHubApp::builder(&fake.url(), APP_ID, &app_key()))
        .write_budget(3, Duration::from_millis(300))
        .build()
        .unwrap();
    let n = fake.open_pull_request(REPO, PrSpec::default());
    let gh = app.installation(INSTALLATION).await.unwrap();
    let start = Instant::now();
    let first = gh.create_comment(REPO, n, "1").await.unwrap();
    gh.update_comment(REPO, first.id, "2").await.unwrap();
    gh.react(REPO, first.id, "eyes").await.unwrap();
    assert!(start.elapsed() < Duration::from_millis(300));
    gh.create_comment(REPO, n, "3").await.unwrap();
    gh.minimize_comment(&first.node_id).await.unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(300),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(app.write_calls(), 5);
    assert_eq!(fake.write_calls_for(INSTALLATION), 5);
    gh.comments(REPO, n).await.unwrap();
    assert_eq!(app.write_calls(), 5, "reads are not writes");
    assert!(
        metrics()
            .render()
            .contains("cascade_github_write_budget_waits_total")
    );
}

#[tokio::test]
async fn webhook_deliveries_are_signed_and_shaped_like_githubs() {
    let fake = github().await;
    // GitHub's documented test vector.
    assert_eq!(
        fake_github::signature("It's a Secret to Everybody", b"Hello, World!"),
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    );
    let n = fake.open_pull_request(REPO, PrSpec::default());
    fake.push(REPO, n, &"e".repeat(40), files(2));
    let sync = fake.pull_request_event(REPO, n, "synchronize");
    assert_eq!(
        sync.signature,
        fake_github::signature(&fake.webhook_secret(), &sync.body)
    );
    let payload = sync.payload();
    assert_eq!(payload["before"], "a".repeat(40));
    assert_eq!(payload["pull_request"]["head"]["sha"], "e".repeat(40));
    assert_eq!(payload["installation"]["id"], INSTALLATION);
    assert_eq!(payload["repository"]["full_name"], REPO);

    let comment = fake.user_comment(REPO, n, "bob", "/apply abc");
    let event = fake.issue_comment_event(&comment).payload();
    assert_eq!(event["comment"]["user"]["login"], "bob");
    assert_eq!(event["comment"]["id"], comment.id);
    assert_eq!(event["issue"]["number"], n);
    assert!(event["issue"]["pull_request"]["url"].is_string());

    let install = fake.installation_event(INSTALLATION, "created").payload();
    assert_eq!(install["installation"]["account"]["login"], "acme");
    assert_eq!(install["repositories"][0]["full_name"], REPO);
}

mod drift_issues {
    //! What a drift run needs: the default branch and its head, and the one issue per
    //! repository (created, edited, closed, reopened, read back, commented on, 👀).

    use super::*;
    use crate::support::recorder::Recorder;
    use cascade::event::{Event, parse_event};
    use cascade::forge::{Forge, GitCredential, GitOrigin, TooLong};
    use cascade::workspace::Workspaces;
    use std::path::Path;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A bare origin with `main` and `release/2026-q1` one commit apart: (dir, origin,
    /// main's sha, the release branch's sha).
    fn origin() -> (tempfile::TempDir, String, String, String) {
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
        let origin = origin.to_str().unwrap().to_string();
        git(
            tmp.path(),
            &["clone", "-q", "--bare", work.to_str().unwrap(), &origin],
        );
        (tmp, origin, main, release)
    }

    async fn forge(app: &GitHubApp) -> Forge {
        Forge::GitHub(app.installation(INSTALLATION).await.unwrap())
    }

    /// A fake GitHub serving `REPO` from `origin`, and the App's forge handle for it.
    async fn serving(origin: &str) -> (FakeGitHub, GitHubApp, Forge) {
        let fake = FakeGitHub::start().await;
        fake.add_installation(INSTALLATION, "acme");
        fake.add_repo(REPO, Some(Path::new(origin)));
        let app = quick(GitHubApp::builder(&fake.url(), APP_ID, &app_key()))
            .build()
            .unwrap();
        let forge = forge(&app).await;
        (fake, app, forge)
    }

    #[tokio::test]
    async fn the_default_branch_and_its_head_are_read_now() {
        let (_tmp, origin, main, release) = origin();
        let (fake, app, forge) = serving(&origin).await;
        let branch = forge.default_branch(REPO).await.unwrap();
        assert_eq!(
            (
                branch.name.as_str(),
                branch.sha.as_str(),
                branch.clone_url.as_str()
            ),
            ("main", main.as_str(), fake.clone_url(REPO).as_str())
        );
        // A new default, with a slash in its name, is read on the next call.
        fake.set_default_branch(REPO, "release/2026-q1");
        let branch = forge.default_branch(REPO).await.unwrap();
        assert_eq!(
            (branch.name.as_str(), branch.sha),
            ("release/2026-q1", release)
        );
        assert_eq!(
            count(&fake, "GET", "/repos/acme/infra/branches/release/2026-q1"),
            1
        );
        // A default branch with no commits yet says what to do.
        fake.set_default_branch(REPO, "trunk");
        let text = format!("{:#}", forge.default_branch(REPO).await.unwrap_err());
        assert!(text.contains("no branch \"trunk\" yet"), "{text}");
        assert_eq!(app.write_calls(), 0, "reads are not writes");
    }

    /// The installation token goes to GitHub's git origin only: the clone URL comes from
    /// `GET /repos/{o}/{r}` and is refused at any other origin; a URL elsewhere never gets
    /// the credential, and a redirect is not followed, so a stranger's listener never
    /// sees a request.
    #[tokio::test]
    async fn the_installation_token_never_reaches_another_origin() {
        let (tmp, origin, main, _release) = origin();
        let (fake, app, forge) = serving(&origin).await;
        let credential = forge.git_credential().await.unwrap();
        assert_eq!(credential.origin().to_string(), fake.url());
        let workspaces = Workspaces::new(tmp.path().join("workspaces"));
        let from = forge.default_branch(REPO).await.unwrap().clone_url;
        let mirror = workspaces
            .fetch(REPO, &from, Some(&credential), &["main".into()])
            .await
            .unwrap();
        assert_eq!(git(&mirror, &["rev-parse", "main"]), main);
        // The fake's git refuses a fetch without the token, as GitHub does.
        let err = workspaces
            .fetch(REPO, &from, None, &["main".into()])
            .await
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("cannot fetch acme/infra"),
            "{err:#}"
        );

        let stranger = Recorder::not_found();
        let elsewhere = format!("{}/{REPO}.git", stranger.url);
        fake.answer_clone_url(REPO, &elsewhere);
        let err = forge.default_branch(REPO).await.unwrap_err();
        let text = format!("{err:#}");
        assert!(text.contains("not at the configured origin"), "{text}");
        assert!(text.contains(&fake.url()), "{text}");
        let foreign = GitOrigin::for_github_api(&stranger.url)
            .unwrap()
            .clone_url(&elsewhere)
            .unwrap();
        let err = workspaces
            .fetch(REPO, &foreign, Some(&credential), &["main".into()])
            .await
            .unwrap_err();
        assert!(format!("{err:#}").contains("nowhere else"), "{err:#}");

        let redirecting = Recorder::redirecting_to(&stranger.url);
        let at_redirecting = GitOrigin::for_github_api(&redirecting.url).unwrap();
        let from = at_redirecting
            .clone_url(&format!("{}/{REPO}.git", redirecting.url))
            .unwrap();
        let token = app.installation_token(INSTALLATION).await.unwrap();
        let credential = GitCredential::new(at_redirecting, token);
        assert!(
            workspaces
                .fetch(REPO, &from, Some(&credential), &["main".into()])
                .await
                .is_err()
        );
        assert!(redirecting.saw_credentials(), "{:?}", redirecting.heads());
        assert!(stranger.heads().is_empty(), "{:?}", stranger.heads());
    }

    #[tokio::test]
    async fn an_issue_is_created_edited_closed_reopened_and_read_back() {
        let (fake, app) = setup().await;
        let forge = forge(&app).await;
        // Issues and pull requests share one sequence of numbers.
        let pr = fake.open_pull_request(REPO, PrSpec::default());
        let n = forge
            .create_issue(REPO, "Drift detected", "`live/dev/vpc`: 1 to change")
            .await
            .unwrap();
        assert_eq!(n, pr + 1);
        let issue = fake.issue(REPO, n).unwrap();
        assert_eq!(
            (
                issue.author.as_str(),
                issue.title.as_str(),
                issue.state.as_str()
            ),
            (BOT_LOGIN, "Drift detected", "open")
        );
        assert_eq!(forge.issue_open(REPO, n).await.unwrap(), Some(true));

        forge
            .edit_issue(REPO, n, "Drift detected (2 units)", "both")
            .await
            .unwrap();
        let issue = fake.issue(REPO, n).unwrap();
        assert_eq!(
            (issue.title.as_str(), issue.body.as_str()),
            ("Drift detected (2 units)", "both")
        );
        assert_eq!(issue.edits.len(), 1);

        forge.set_issue_open(REPO, n, false).await.unwrap();
        let issue = fake.issue(REPO, n).unwrap();
        assert_eq!(
            (issue.state.as_str(), issue.state_reason.as_deref()),
            ("closed", Some("completed"))
        );
        assert_eq!(forge.issue_open(REPO, n).await.unwrap(), Some(false));
        // Closing a closed issue changes nothing.
        forge.set_issue_open(REPO, n, false).await.unwrap();
        assert_eq!(fake.issue(REPO, n).unwrap().state, "closed");
        forge.set_issue_open(REPO, n, true).await.unwrap();
        let issue = fake.issue(REPO, n).unwrap();
        assert_eq!(
            (issue.state.as_str(), issue.state_reason.as_deref()),
            ("open", Some("reopened"))
        );
        assert_eq!(forge.issue_open(REPO, n).await.unwrap(), Some(true));
        let patch =
            |fake: &FakeGitHub| count(fake, "PATCH", &format!("/repos/acme/infra/issues/{n}"));
        assert_eq!(patch(&fake), 4);
        assert_eq!(app.write_calls(), 5, "one create, four updates");
    }

    #[tokio::test]
    async fn an_issue_that_is_not_here_is_none() {
        let (fake, app) = setup().await;
        let forge = forge(&app).await;
        assert_eq!(
            forge.issue_open(REPO, 99).await.unwrap(),
            None,
            "never was (404)"
        );
        let pr = fake.open_pull_request(REPO, PrSpec::default());
        assert_eq!(
            forge.issue_open(REPO, pr).await.unwrap(),
            None,
            "a pull request's number"
        );
        let n = forge
            .create_issue(REPO, "Drift detected", "x")
            .await
            .unwrap();
        fake.delete_issue(REPO, n);
        assert_eq!(
            forge.issue_open(REPO, n).await.unwrap(),
            None,
            "deleted (410)"
        );
        assert!(fake.issue(REPO, n).is_none());
        // Writing to a deleted issue is GitHub's 410, for the caller to open a new one.
        let error = forge.set_issue_open(REPO, n, false).await.unwrap_err();
        assert_eq!(error.downcast_ref::<ApiError>().unwrap().status, 410);
    }

    #[tokio::test]
    async fn comments_on_an_issue_are_posted_and_acknowledged() {
        let (fake, app) = setup().await;
        let forge = forge(&app).await;
        let n = forge
            .create_issue(REPO, "Drift detected", "plan")
            .await
            .unwrap();
        let command = fake.user_comment(REPO, n, "bob", "/apply 3f9a2c1b7d4e");
        forge
            .acknowledge_issue_comment(REPO, n, command.id)
            .await
            .unwrap();
        assert_eq!(
            fake.reactions(command.id),
            [(BOT_LOGIN.to_string(), "eyes".to_string())]
        );
        let reply = forge.comment_on_issue(REPO, n, "Applied.").await.unwrap();
        let comments = fake.issue(REPO, n).unwrap().comments;
        let seen: Vec<_> = comments
            .iter()
            .map(|c| (c.id, c.author.as_str(), c.body.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                (command.id, "bob", "/apply 3f9a2c1b7d4e"),
                (reply, BOT_LOGIN, "Applied.")
            ]
        );
        // The comment webhook on a plain issue is signed and parses as an issue comment.
        let delivery = fake.issue_comment_event(&command);
        assert_eq!(
            delivery.signature,
            fake_github::signature(&fake.webhook_secret(), &delivery.body)
        );
        assert!(delivery.payload()["issue"].get("pull_request").is_none());
        let Ok(Event::IssueComment(event)) = parse_event(&delivery.event, &delivery.body) else {
            panic!("not an issue comment");
        };
        assert_eq!(
            (
                event.pull_request.number,
                event.comment.id.0,
                event.comment.body.as_str()
            ),
            (n, command.id, "/apply 3f9a2c1b7d4e")
        );
        assert_eq!(event.installation.map(|i| i.0), Some(INSTALLATION));
    }

    #[tokio::test]
    async fn too_long_is_refused_before_any_request() {
        let (fake, app) = setup().await;
        let forge = forge(&app).await;
        assert_eq!(
            (forge.issue_title_limit(), forge.comment_limit()),
            (256, 65_536)
        );
        let n = forge
            .create_issue(REPO, &"t".repeat(256), "ok")
            .await
            .unwrap();
        let requests = fake.requests().len();
        let refusals = [
            forge
                .create_issue(REPO, &"t".repeat(257), "b")
                .await
                .unwrap_err(),
            forge
                .create_issue(REPO, "t", &"b".repeat(65_537))
                .await
                .unwrap_err(),
            forge
                .edit_issue(REPO, n, "t", &"b".repeat(65_537))
                .await
                .unwrap_err(),
            forge
                .comment_on_issue(REPO, n, &"c".repeat(65_537))
                .await
                .unwrap_err(),
        ];
        let fields: Vec<_> = refusals
            .iter()
            .map(|e| e.downcast_ref::<TooLong>().expect("TooLong").field)
            .collect();
        assert_eq!(fields, ["title", "body", "body", "comment"]);
        assert!(
            format!("{}", refusals[1]).contains("at most 65536"),
            "{}",
            refusals[1]
        );
        assert_eq!(fake.requests().len(), requests, "nothing was sent");
        // Exactly at the limit is stored.
        forge
            .edit_issue(REPO, n, "t", &"b".repeat(65_536))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn an_issue_github_stored_before_failing_is_not_opened_twice() {
        let (fake, app) = setup().await;
        let forge = forge(&app).await;
        fake.open_issue(REPO, "bob", "Drift detected", "a user's copy");
        fake.fail_next_after_storing("issues.create", Failure::status(502));
        let n = forge
            .create_issue(REPO, "Drift detected", "plan")
            .await
            .unwrap();
        let issues = fake.issues(REPO);
        let ours: Vec<_> = issues.iter().filter(|i| i.author == BOT_LOGIN).collect();
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].number, n);
        assert_eq!(count(&fake, "POST", "/repos/acme/infra/issues"), 1);
        // A 502 that stored nothing is looked for, then sent again.
        fake.fail_next("issues.create", Failure::status(502));
        let again = forge
            .create_issue(REPO, "Drift detected", "plan 2")
            .await
            .unwrap();
        assert_eq!(fake.issue(REPO, again).unwrap().body, "plan 2");
        assert_eq!(count(&fake, "POST", "/repos/acme/infra/issues"), 3);
    }

    #[tokio::test]
    async fn without_issues_write_the_refusal_names_the_permission() {
        let (fake, app) = setup().await;
        fake.set_app_permission(INSTALLATION, "issues", Some("read"));
        let forge = forge(&app).await;
        let error = forge
            .create_issue(REPO, "Drift detected", "x")
            .await
            .unwrap_err();
        assert_eq!(error.downcast_ref::<ApiError>().unwrap().status, 403);
        assert!(format!("{error:#}").contains("issues"), "{error:#}");
        assert_eq!(
            count(&fake, "POST", "/repos/acme/infra/issues"),
            1,
            "a 403 is not retried"
        );
    }
}

mod pull_request_commits {
    //! `GET …/pulls/{n}/commits`: every page, the accounts GitHub links authors and
    //! committers to (never `web-flow`), and GitHub's 250-commit cap as an error.

    use super::*;
    use crate::support::origin_with_commits as origin;
    use cascade::forge::CommitPerson;

    /// Someone no account has the email of.
    const T: &str = "t <t@example.com>";

    #[tokio::test]
    async fn commits_are_read_across_pages_with_the_accounts_github_links() {
        let mut people = vec![
            ("Carol <carol@example.com>", T),
            // Edited in GitHub's web interface: committed by `web-flow`.
            ("Bob <bob@example.com>", "GitHub <noreply@github.com>"),
        ];
        people.extend(std::iter::repeat_n((T, T), 118));
        let (_tmp, origin, base, head) = origin(&people);
        let fake = FakeGitHub::start().await;
        fake.add_installation(INSTALLATION, "acme");
        fake.add_repo(REPO, Some(&origin));
        fake.link_email("Carol@Example.com", "carol");
        fake.link_email("bob@example.com", "bob");
        let n = fake.open_pull_request(
            REPO,
            PrSpec {
                base_sha: base,
                head_sha: head.clone(),
                ..PrSpec::default()
            },
        );
        let app = quick(GitHubApp::builder(&fake.url(), APP_ID, &app_key()))
            .build()
            .unwrap();
        let gh = app.installation(INSTALLATION).await.unwrap();
        let commits = gh.commits(REPO, n).await.unwrap();
        assert_eq!(commits.len(), 120);
        assert_eq!(commits.last().unwrap().sha, head, "oldest first");
        assert_eq!(commits[0].people, [CommitPerson::Account("carol".into())]);
        assert_eq!(commits[1].people, [CommitPerson::Account("bob".into())]);
        assert!(commits[2].people.is_empty(), "an unlinked email is nobody");
        assert_eq!(count(&fake, "GET", "/repos/acme/infra/pulls/1/commits"), 2);
    }

    #[tokio::test]
    async fn githubs_cap_of_250_commits_is_an_error_not_a_shorter_list() {
        let people = vec![(T, T); 251];
        let (_tmp, origin, base, head) = origin(&people);
        let fake = FakeGitHub::start().await;
        fake.add_installation(INSTALLATION, "acme");
        fake.add_repo(REPO, Some(&origin));
        let n = fake.open_pull_request(
            REPO,
            PrSpec {
                base_sha: base,
                head_sha: head,
                ..PrSpec::default()
            },
        );
        let app = quick(GitHubApp::builder(&fake.url(), APP_ID, &app_key()))
            .build()
            .unwrap();
        let gh = app.installation(INSTALLATION).await.unwrap();
        let text = format!("{:#}", gh.commits(REPO, n).await.unwrap_err());
        assert!(text.contains("at most 250 commits"), "{text}");
    }
}
