//! cascade's GitHub client against the stateful fake GitHub: authentication,
//! every endpoint cascade uses, pagination and caps, and how it behaves when
//! GitHub pushes back (rate limits, server errors, the write budget).

#[path = "support/fake_github.rs"]
mod fake_github;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cascade::forge::github::{
    ApiError, CheckOutput, CheckStatus, GitHubApp, GitHubAppBuilder, Permission,
};
use fake_github::{APP_ID, BOT_LOGIN, Failure, FakeGitHub, FileChange, PrSpec, app_key};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

const REPO: &str = "acme/infra";
const INSTALLATION: u64 = 77;

fn metrics() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| PrometheusBuilder::new().install_recorder().unwrap())
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
    fake.add_repo(REPO, "https://github.com/acme/infra.git");
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
