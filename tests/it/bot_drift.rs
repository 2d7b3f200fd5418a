//! Drift in the server end to end: the fake GitHub, the real server (one, or two
//! replicas on one PostgreSQL), the real terraform on the bundled example, and the
//! drift flow driven by its scheduler (ticking every second here) and by comments
//! on the drift issue.
//!
//! Infrastructure state is real: the example's units keep local state in the
//! checkout they run in, and the drift runs of a repository run in their own
//! checkout (`pr-0`). So a first run finds every covered unit missing (drift: the
//! code wants resources the state lacks), `/apply` on the drift issue creates them,
//! and a later commit on `main` that changes an input (made out of band, outside
//! any pull request) makes exactly that unit differ from its state again.

use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::postgres;
use crate::support::replicas;
use crate::support::replies::redacted;

use bot_world::{REPO, World, git_out, push, world_configured, world_unserved};
use cascade::server::ServeConfig;
use fake_github::{BOT_LOGIN, IssueSnapshot};
use replicas::{Terraform, in_process, post, pull_request};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Generous: terraform and the server share two cores with other builds.
const LONG: Duration = Duration::from_secs(240);

/// Drift every 10 minutes over three independent units (the first wave of the graph).
const DRIFT: &str = "drift:\n  schedule: 10m\n  units: [\"global/*\", \"*/network\"]\n";

/// The units `DRIFT` covers, sorted.
const COVERED: [&str; 3] = ["dev/network", "global/dns", "prod/network"];

/// The title of the drift issue on the example's default branch.
const TITLE: &str = "cascade: drift on main";

/// The server's configuration for these tests: the scheduler ticks every second.
fn ticking(config: &mut ServeConfig) {
    config.drift_tick = Duration::from_secs(1);
}

/// A world whose `.cascade.yaml` has `extra`, its server ticking every second and
/// running `terraform` (the logging stand-in in front of the real one).
async fn drift_world(extra: &str, terraform: &Terraform) -> World {
    let bin = terraform.bin().display().to_string();
    world_configured(extra, move |c| {
        ticking(c);
        c.terraform_bin = bin;
    })
    .await
}

/// The App is installed: the repository becomes known to the scheduler.
async fn installed(w: &World, hook: &str) {
    let status = post(&w.fake.installation_event(77, "created"), hook).await;
    assert!((200..300).contains(&status), "installation event: {status}");
}

/// The issues cascade opened.
fn bot_issues(w: &World) -> Vec<IssueSnapshot> {
    w.fake
        .issues(REPO)
        .into_iter()
        .filter(|i| i.author == BOT_LOGIN)
        .collect()
}

fn issues_now(w: &World) -> impl Fn() -> String + '_ {
    move || format!("issues: {:#?}", w.fake.issues(REPO))
}

/// Waits for the drift issue and answers it (there is exactly one).
async fn drift_issue(w: &World) -> IssueSnapshot {
    w.until_within(
        "the drift issue",
        LONG,
        |_| !bot_issues(w).is_empty(),
        issues_now(w),
    )
    .await;
    let issues = bot_issues(w);
    assert_eq!(issues.len(), 1, "{issues:#?}");
    issues.into_iter().next().unwrap()
}

/// A world with `DRIFT`, installed, and the drift issue its first run opened.
async fn drift_opened() -> (Terraform, World, IssueSnapshot) {
    let terraform = Terraform::new();
    let w = drift_world(DRIFT, &terraform).await;
    installed(&w, &w.hook()).await;
    let opened = drift_issue(&w).await;
    (terraform, w, opened)
}

/// The issue `number` now.
fn issue(w: &World, number: u64) -> IssueSnapshot {
    w.fake.issue(REPO, number).expect("the issue exists")
}

/// Waits until `cond` holds for issue `number`; answers it then.
async fn issue_until(
    w: &World,
    number: u64,
    what: &str,
    cond: impl Fn(&IssueSnapshot) -> bool,
) -> IssueSnapshot {
    w.until_within(what, LONG, |w| cond(&issue(w, number)), issues_now(w))
        .await;
    issue(w, number)
}

/// The plan id in the drift issue's `/apply <id>` line.
fn apply_id(body: &str) -> String {
    let at = body.find("`/apply ").expect("an /apply line") + "`/apply ".len();
    let id: String = body[at..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    assert_eq!(id.len(), 12, "{body}");
    id
}

/// The units the drift issue's body lists as drifted, in its order.
fn drifted_units(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("### `")?.strip_suffix('`'))
        .map(str::to_string)
        .collect()
}

/// The App's comments on issue `number`, oldest first.
fn bot_texts(w: &World, number: u64) -> Vec<String> {
    w.bot_texts(number)
}

/// `user` comments `body` on issue `n`: waits for cascade's reply and answers it.
async fn reply_to(w: &World, n: u64, user: &str, body: &str) -> String {
    let before = bot_texts(w, n).len();
    assert_eq!(w.comment(n, user, body).await, 202);
    w.until_within(
        "cascade's reply",
        LONG,
        |_| bot_texts(w, n).len() > before,
        issues_now(w),
    )
    .await;
    bot_texts(w, n).pop().unwrap()
}

/// Where the drift runs keep `unit`'s state.
fn drift_state(w: &World, unit: &str) -> PathBuf {
    w.data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-0")
        .join(unit)
        .join("terraform.tfstate")
}

/// `terraform plan` runs in the drift checkout, per unit.
fn drift_plans(terraform: &Terraform) -> Vec<String> {
    terraform
        .calls()
        .into_iter()
        .filter(|c| c.verb == "plan" && c.pr() == Some(0))
        .map(|c| c.unit().to_string())
        .collect()
}

/// The repository's drift schedule straight from the server's SQLite database:
/// `(next_at, last_run_at, owner, issue_number)`.
async fn schedule_row(data: &Path) -> Option<(i64, Option<i64>, Option<String>, Option<i64>)> {
    let url = format!("sqlite://{}?mode=ro", data.join("cascade.db").display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let row = sqlx::query_as(
        "SELECT next_at, last_run_at, owner, issue_number FROM drift_schedules WHERE repo = $1",
    )
    .bind(REPO)
    .fetch_optional(&pool)
    .await
    .unwrap();
    pool.close().await;
    row
}

/// Waits until the drift job that looked at the repository has given its claim back
/// with a next time at least `ahead` seconds away; answers the row.
async fn released(w: &World, ahead: i64) -> (i64, Option<i64>, Option<String>, Option<i64>) {
    let started = std::time::Instant::now();
    while started.elapsed() < LONG {
        if let Some(row) = schedule_row(w.data.path()).await
            && row.2.is_none()
            && row.0 >= now() + ahead - 5
        {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "the drift schedule was not released: {:?}",
        schedule_row(w.data.path()).await
    );
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A commit on `main` (not through a pull request) that changes `global/dns`'s
/// zone name, pushed to the origin: the code now differs from the applied state.
fn change_main_out_of_band(w: &World) {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "main"]);
    let file = dir.join("global/dns/main.tf");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"example.test\""));
    std::fs::write(&file, text.replace("\"example.test\"", "\"drifted.test\"")).unwrap();
    git_out(dir, &["commit", "-qam", "rename the zone"]);
    push(w, "main");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drift_issue_is_opened_once_and_updated_in_place() {
    let (terraform, w, first) = drift_opened().await;
    assert_eq!(first.title, TITLE);
    assert_eq!(first.state, "open");
    let body = &first.body;
    assert!(body.starts_with("<!-- cascade:drift -->"), "{body}");
    // Nothing applied yet: each covered unit's resource is missing, and nothing else is listed.
    assert!(body.contains("## Drift: 3 of 3 units drifted"), "{body}");
    assert_eq!(drifted_units(body), COVERED, "{body}");
    assert_eq!(
        body.matches("**Plan:** 1 to add, 0 to change, 0 to destroy.")
            .count(),
        3,
        "{body}"
    );
    for other in ["dev/app", "prod/app", "dev/dns", "prod/dns", "database"] {
        assert!(!body.contains(other), "{other} is not covered: {body}");
    }
    // The attribute-level diff: what each resource would be created with.
    for value in ["example.test", "10.10.0.0/16", "10.20.0.0/16"] {
        assert!(body.contains(value), "{value} in the diff: {body}");
    }
    let id = apply_id(body);
    assert!(body.contains("`/plan`"), "{body}");
    assert_eq!(drift_plans(&terraform).len(), 3);
    let row = released(&w, 500).await;
    assert_eq!(row.3, Some(first.number as i64), "the issue is remembered");
    assert!(row.1.is_some(), "the run is recorded");
    // Without --metrics-repo-labels the gauges are totals: no repository is named.
    let metrics = reqwest::get(format!(
        "http://{}/metrics",
        w.server.as_ref().unwrap().addr
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    for gauge in ["cascade_drifted_units ", "cascade_drifted_repositories "] {
        assert!(metrics.contains(gauge), "{gauge}: {metrics}");
    }
    assert!(!metrics.contains("acme/infra"), "{metrics}");
    assert!(!metrics.contains("repo="), "{metrics}");

    // A writer asks for another look: the same issue is edited, nothing is posted.
    w.fake.set_permission(REPO, "bob", "write");
    assert_eq!(w.comment(first.number, "bob", "/plan").await, 202);
    let second = issue_until(&w, first.number, "the issue edited", |i| {
        !i.edits.is_empty()
    })
    .await;
    assert_eq!(bot_issues(&w).len(), 1, "still one issue");
    assert_eq!(second.title, TITLE);
    assert_eq!(second.state, "open");
    assert_eq!(drifted_units(&second.body), COVERED, "{}", second.body);
    assert_eq!(second.edits.len(), 1);
    assert_eq!(&second.edits[0].1, body, "the edit replaced the first body");
    assert_eq!(apply_id(&second.body).len(), id.len());
    assert!(
        bot_texts(&w, first.number).is_empty(),
        "a run edits the issue and posts nothing: {:#?}",
        bot_texts(&w, first.number)
    );
    assert_eq!(drift_plans(&terraform).len(), 6, "one more plan per unit");
    // The schedule does not fire again within its 10 minutes, however often it ticks.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(issue(&w, first.number).edits.len(), 1);
    assert_eq!(drift_plans(&terraform).len(), 6);
    assert_eq!(bot_issues(&w).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_on_the_drift_issue_needs_write_permission_and_a_clean_run_closes_it() {
    let (terraform, w, opened) = drift_opened().await;
    let n = opened.number;
    let id = apply_id(&opened.body);

    // A reader may not apply.
    let refusal = &reply_to(&w, n, "mallory", &format!("/apply {id}")).await;
    assert!(refusal.contains("write permission"), "{refusal}");
    assert!(refusal.contains("@mallory"), "{refusal}");
    insta::assert_snapshot!("drift_apply_refused_reader", redacted(refusal));
    for unit in COVERED {
        assert!(!drift_state(&w, unit).exists(), "{unit} was not applied");
    }
    assert!(terraform.calls().iter().all(|c| c.verb != "apply"));

    // A writer applies; the check that follows finds nothing and closes the issue.
    w.fake.set_permission(REPO, "bob", "write");
    assert_eq!(w.comment(n, "bob", &format!("/apply {id}")).await, 202);
    let closed = issue_until(&w, n, "the issue closed", |i| i.state == "closed").await;
    assert_eq!(closed.state_reason.as_deref(), Some("completed"));
    let texts = bot_texts(&w, n);
    assert_eq!(texts.len(), 3, "{texts:#?}");
    assert!(texts[1].starts_with("<!-- cascade:apply"), "{}", texts[1]);
    for unit in COVERED {
        assert!(texts[1].contains(unit), "{unit} applied: {}", texts[1]);
        assert!(drift_state(&w, unit).is_file(), "{unit}'s state exists");
    }
    assert!(
        texts[2].starts_with("No drift on `main`") && texts[2].contains("Closing"),
        "{}",
        texts[2]
    );
    insta::assert_snapshot!("drift_closed_after_a_clean_run", redacted(&texts[2]));
    let applies: Vec<String> = terraform
        .calls()
        .into_iter()
        .filter(|c| c.verb == "apply")
        .map(|c| c.unit().to_string())
        .collect();
    assert_eq!(applies.len(), 3, "each unit applied once: {applies:?}");

    // The code on main changes out of band: the real zone now differs from it, and
    // the next check reopens the same issue listing exactly that unit.
    change_main_out_of_band(&w);
    assert_eq!(w.comment(n, "bob", "/plan").await, 202);
    let reopened = issue_until(&w, n, "the issue reopened", |i| i.state == "open").await;
    assert_eq!(bot_issues(&w).len(), 1, "no second issue");
    assert_eq!(reopened.title, TITLE);
    let body = &reopened.body;
    assert!(body.contains("## Drift: 1 of 3 units drifted"), "{body}");
    assert_eq!(drifted_units(body), ["global/dns"], "{body}");
    assert!(
        body.contains("**Plan:** 0 to add, 1 to change, 0 to destroy."),
        "{body}"
    );
    assert!(body.contains("**Clean:** 2 units."), "{body}");
    assert!(
        body.contains("example.test") && body.contains("drifted.test"),
        "the diff shows the old and the new zone name: {body}"
    );
    assert_ne!(apply_id(body), id, "a new plan");
    assert_eq!(bot_texts(&w, n).len(), 3, "reopening posts nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_locked_by_a_pull_request_is_neither_planned_nor_applied_by_drift() {
    let (terraform, w, opened) = drift_opened().await;
    let n = opened.number;
    let id = apply_id(&opened.body);
    released(&w, 500).await;

    // A pull request changing global/dns plans it and holds its lock.
    let pr = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(pr, "opened").await, 202);
    w.until_within(
        "the pull request's plan",
        LONG,
        |_| w.checks_done(&w.head_sha),
        issues_now(&w),
    )
    .await;
    let plan = w.plan_comment(pr);
    assert!(plan.contains("| `global/dns` |"), "{plan}");

    // The drift plan covers global/dns: not applied at all while the pull request holds it.
    w.fake.set_permission(REPO, "bob", "write");
    let refusal = &reply_to(&w, n, "bob", &format!("/apply {id}")).await;
    assert!(refusal.starts_with("Not applied"), "{refusal}");
    assert!(
        refusal.contains(&format!("`global/dns` (#{pr})"))
            && refusal.contains("locked by an open pull request"),
        "{refusal}"
    );
    insta::assert_snapshot!("drift_apply_refused_locked_unit", redacted(refusal));
    assert!(terraform.calls().iter().all(|c| c.verb != "apply"));
    for unit in COVERED {
        assert!(!drift_state(&w, unit).exists(), "{unit} was not applied");
    }

    // A drift run leaves the locked unit alone and says so.
    let plans_before = drift_plans(&terraform);
    assert_eq!(w.comment(n, "bob", "/plan").await, 202);
    let updated = issue_until(&w, n, "the issue edited", |i| !i.edits.is_empty()).await;
    let body = &updated.body;
    assert_eq!(
        drifted_units(body),
        ["dev/network", "prod/network"],
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "**Not checked** (locked by a pull request): `global/dns` (#{pr})"
        )),
        "{body}"
    );
    let plans = drift_plans(&terraform);
    let mut this_run = plans[plans_before.len()..].to_vec();
    this_run.sort();
    assert_eq!(
        this_run,
        ["dev/network", "prod/network"],
        "global/dns is not planned in the drift checkout: {plans:?}"
    );
    assert_eq!(bot_texts(&w, n).len(), 1, "{:#?}", bot_texts(&w, n));
    assert_eq!(bot_issues(&w).len(), 1);

    // The drift run gave back the locks it took, and left the pull request's: a pull
    // request on dev/network plans it.
    let (pr2, head) = pull_request(&w, "net", "dev/network/main.tf", &["dev/network/main.tf"]);
    assert_eq!(w.send_pr(pr2, "opened").await, 202);
    w.until_within(
        "the second pull request's plan",
        LONG,
        |_| w.checks_done(&head),
        issues_now(&w),
    )
    .await;
    // Its dependents reach dev/dns, which the first pull request still holds.
    let plan = &w.bot_texts(pr2)[0];
    assert!(plan.contains("| `dev/network` | 1 to add"), "{plan}");
    assert!(!plan.contains("`dev/network` — `locked"), "{plan}");
    assert!(!plan.contains("locked by #0"), "{plan}");
    assert!(
        plan.contains(&format!("`dev/dns` — `locked by #{pr}")),
        "{plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comments_on_any_other_issue_get_no_reply_and_no_api_call() {
    let (terraform, w, drift) = drift_opened().await;
    released(&w, 500).await;
    let id = apply_id(&drift.body);
    let other = w
        .fake
        .open_issue(REPO, "alice", "The DNS is slow", "/plan please");
    w.fake.set_permission(REPO, "bob", "write");
    let before = w.fake.requests().len();
    let writes = w.fake.write_calls();
    for body in [
        "/plan".to_string(),
        format!("/apply {id}"),
        "/help".into(),
        "/unlock".into(),
        "/apply".into(),
    ] {
        assert_eq!(w.comment(other, "bob", &body).await, 202);
    }
    // The repository's drift jobs run one at a time in order: once `/help` on the drift
    // issue is answered, the comments above have been handled.
    let help = reply_to(&w, drift.number, "bob", "/help").await;
    assert!(help.contains("/apply <id>"), "{help}");
    let requests = w.fake.requests()[before..].to_vec();
    let mentioning: Vec<_> = requests
        .iter()
        .filter(|r| r.path.contains(&format!("/issues/{other}")))
        .collect();
    assert!(mentioning.is_empty(), "{mentioning:#?}");
    // The only writes are the help's: its reaction and its reply.
    assert_eq!(w.fake.write_calls() - writes, 2, "{requests:#?}");
    assert!(bot_texts(&w, other).is_empty());
    for c in w.fake.comments(REPO, other) {
        assert!(w.fake.reactions(c.id).is_empty(), "{c:?}");
    }
    let row = schedule_row(w.data.path()).await.unwrap();
    assert_eq!(row.3, Some(drift.number as i64), "still the drift issue");
    assert_eq!(issue(&w, drift.number).edits.len(), 0, "no drift run");
    assert_eq!(drift_plans(&terraform).len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_drift_or_with_it_off_no_issue_is_ever_opened() {
    for extra in ["", "drift:\n  schedule: 10m\n  enabled: false\n"] {
        let terraform = Terraform::new();
        let w = drift_world(extra, &terraform).await;
        installed(&w, &w.hook()).await;
        // Looked at, found off: looked at again in an hour, never run.
        let row = released(&w, 3000).await;
        assert_eq!(row.1, None, "{extra:?}: no run recorded");
        assert_eq!(row.3, None, "{extra:?}: no issue remembered");
        // A user's issue with commands on it gets nothing either.
        let other = w.fake.open_issue(REPO, "alice", "Drift?", "");
        w.fake.set_permission(REPO, "bob", "write");
        let before = w.fake.requests().len();
        assert_eq!(w.comment(other, "bob", "/plan").await, 202);
        w.settled().await;
        assert!(
            bot_issues(&w).is_empty(),
            "{extra:?}: {:#?}",
            bot_issues(&w)
        );
        assert!(bot_texts(&w, other).is_empty(), "{extra:?}");
        assert_eq!(w.fake.write_calls(), 0, "{extra:?}");
        assert_eq!(
            w.fake.requests().len(),
            before,
            "{extra:?}: {:#?}",
            &w.fake.requests()[before..]
        );
        assert!(drift_plans(&terraform).is_empty(), "{extra:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_replicas_a_schedule_fires_once() {
    let database = postgres::database().await;
    let w = world_unserved("drift:\n  schedule: 10m\n  units: [\"global/*\"]\n").await;
    let terraform = Terraform::new();
    let bin = terraform.bin().display().to_string();
    let r = in_process(&w, &database, 2, |c| {
        ticking(c);
        c.terraform_bin = bin.clone();
    })
    .await;
    installed(&w, &r.hook(0)).await;
    let opened = drift_issue(&w).await;
    assert_eq!(drifted_units(&opened.body), ["global/dns"]);
    // Both replicas tick every second: give them several ticks after the run ended.
    let pool = sqlx::PgPool::connect(&database).await.unwrap();
    let started = std::time::Instant::now();
    loop {
        let row: Option<(Option<i64>, Option<String>)> =
            sqlx::query_as("SELECT last_run_at, owner FROM drift_schedules WHERE repo = $1")
                .bind(REPO)
                .fetch_optional(&pool)
                .await
                .unwrap();
        if matches!(row, Some((Some(_), None))) {
            break;
        }
        assert!(
            started.elapsed() < LONG,
            "the run was not released: {row:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let issues = bot_issues(&w);
    assert_eq!(issues.len(), 1, "{issues:#?}");
    assert!(
        issues[0].edits.is_empty(),
        "one run: {:#?}",
        issues[0].edits
    );
    let plans: Vec<_> = terraform
        .calls()
        .into_iter()
        .filter(|c| c.verb == "plan" && c.pr() == Some(0))
        .collect();
    assert_eq!(plans.len(), 1, "{plans:#?}");
    let ran_on: Vec<usize> = (0..2).filter(|i| plans[0].by(&r.data(*i))).collect();
    assert_eq!(ran_on.len(), 1, "{plans:#?}");
    pool.close().await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_commands_on_the_drift_issue_gets_a_bounded_number_of_replies() {
    let (_terraform, w, drift) = drift_opened().await;
    released(&w, 500).await;
    let n = drift.number;
    // Anyone who can comment: refusals and help are replies, and replies are limited
    // per issue like on a pull request, so one commenter cannot spend the App's
    // write budget.
    let flood = 14;
    for i in 0..flood {
        let body = if i % 2 == 0 { "/help" } else { "/plan" };
        assert_eq!(w.comment(n, "mallory", body).await, 202);
    }
    // Mallory's last command (the bot may have replied to earlier ones already).
    let last = w
        .fake
        .comments(REPO, n)
        .into_iter()
        .rfind(|c| c.author == "mallory")
        .unwrap()
        .id;
    w.until_within(
        "the last comment acknowledged",
        LONG,
        |_| !w.fake.reactions(last).is_empty(),
        issues_now(&w),
    )
    .await;
    w.settled().await;
    let texts = bot_texts(&w, n);
    assert_eq!(texts.len(), 11, "ten replies and one last word: {texts:#?}");
    assert!(texts[10].contains("will not reply"), "{}", texts[10]);
    insta::assert_snapshot!("drift_reply_limit_notice", redacted(&texts[10]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_command_on_the_drift_issue_posts_nowhere_else() {
    let (_terraform, w, drift) = drift_opened().await;
    released(&w, 500).await;
    let n = drift.number;
    w.fake
        .fail_next("reactions.create", fake_github::Failure::status(422));
    let before = w.fake.requests().len();
    assert_eq!(w.comment(n, "bob", "/help").await, 202);
    // Jobs of the drift key run in order: once this help is answered, the first was handled.
    let help = reply_to(&w, n, "bob", "/help").await;
    assert!(help.contains("/plan"), "{help}");
    insta::assert_snapshot!("drift_help", redacted(&help));
    let stray: Vec<_> = w.fake.requests()[before..]
        .iter()
        .filter(|r| r.path.contains("/issues/0/"))
        .cloned()
        .collect();
    assert!(
        stray.is_empty(),
        "nothing is posted on issue #0: {stray:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_runs_the_plan_phase_steps_and_its_issue_shows_the_visible_ones() {
    let terraform = Terraform::new();
    let workflows = r#"workflows:
  - name: checks
    units: ["global/*"]
    pre_plan:
      - run: {name: lint, command: [sh, -c, "echo lint found nothing"], visible_on: always}
      - run: {name: quiet, command: [sh, -c, "echo QUIET-STEP-OUTPUT"], visible_on: never}
    post_plan:
      - run: {name: cost, command: [sh, -c, "echo '**+$3/month**'"], visible_on: always, format: markdown}
    post_apply:
      - run: {name: apply-only, command: [sh, -c, "echo APPLY-ONLY"], visible_on: always}
"#;
    let w = drift_world(&format!("{DRIFT}{workflows}"), &terraform).await;
    installed(&w, &w.hook()).await;
    let issue = drift_issue(&w).await;
    let body = &issue.body;
    assert!(body.contains("Workflow steps of `global/dns`"), "{body}");
    assert!(body.contains("`lint` (pre_plan) — passed"), "{body}");
    assert!(body.contains("lint found nothing"), "{body}");
    assert!(body.contains("`cost` (post_plan) — passed"), "{body}");
    assert!(
        body.contains("**\\+\\$"),
        "markdown kept, made inert: {body}"
    );
    // `visible_on: never` steps ran but are not shown; apply-phase steps do not run at all.
    assert!(!body.contains("QUIET-STEP-OUTPUT"), "{body}");
    assert!(!body.contains("apply-only"), "{body}");
    // Units the workflow does not cover ran no step.
    assert!(!body.contains("Workflow steps of `dev/network`"), "{body}");
}
