//! Failures where reviewers look, end to end over the fake GitHub with the real terraform:
//! a unit that fails to plan shows the end of its log in the `cascade` check run (redacted,
//! without the server's paths, within GitHub's limit, unable to leave its code block) and
//! the comment names it and points there; an invalid `.cascade.yaml` on the default branch is
//! located and linked at the base commit.

use crate::support;
use crate::support::bot_world;
use crate::support::fake_github;
use crate::support::replies::redacted;

use bot_world::{REPO, World, git_out, push, world, world_with};
use fake_github::{CheckRunState, FileChange, PrSpec};
use support::{config_line, markdown_code_and_rest};

const UNIT_FILE: &str = "global/dns/main.tf";

/// A pull request from a branch off the base that appends `extra` to the DNS unit's
/// `main.tf`; returns its number and head.
fn open_changing_dns(w: &World, branch: &str, extra: &str) -> (u64, String) {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "-B", branch, &w.base_sha]);
    let path = dir.join(UNIT_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n{extra}\n")).unwrap();
    git_out(dir, &["commit", "-qam", "a failing change"]);
    let head = push(w, branch);
    let n = w.fake.open_pull_request(
        REPO,
        PrSpec {
            author: "alice".into(),
            head_ref: branch.into(),
            head_sha: head.clone(),
            base_ref: "main".into(),
            base_sha: w.base_sha.clone(),
            files: vec![FileChange::modified(UNIT_FILE)],
            ..PrSpec::default()
        },
    );
    (n, head)
}

/// A `terraform_data` whose precondition fails at plan time with the message that the
/// HCL expression `message` makes.
fn failing_gate(message: &str) -> String {
    format!(
        r#"resource "terraform_data" "gate" {{
  input = "x"
  lifecycle {{
    precondition {{
      condition     = length(path.cwd) < 0
      error_message = {message}
    }}
  }}
}}"#
    )
}

/// Opens the pull request, waits for its plan, and returns the check's final state and
/// the GitHub writes the event cost.
async fn plan_of(w: &World, n: u64, head: &str) -> (CheckRunState, u64) {
    let before = w.fake.write_calls();
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the completed check and the comment", |w| {
        w.checks_done(head) && !w.bot_texts(n).is_empty()
    })
    .await;
    let runs = w.fake.check_runs(REPO, head);
    assert_eq!(runs.len(), 1, "one check run per head");
    for state in &runs[0].history {
        assert_eq!(state.details_url, None, "details_url stays unset");
    }
    (runs[0].current().clone(), w.fake.write_calls() - before)
}

/// Every form of the server's data directory a message could carry.
fn server_paths(w: &World) -> Vec<String> {
    let data = w.data.path();
    let mut forms = vec![data.display().to_string()];
    if let Ok(real) = data.canonicalize() {
        forms.push(real.display().to_string());
    }
    forms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_that_fails_to_plan_shows_the_end_of_its_log_in_the_check() {
    let w = world().await;
    // A precondition that fails at plan time, whose message quotes the unit's absolute
    // directory, a secret, a code fence, HTML and a terminal escape sequence.
    let (n, head) = open_changing_dns(
        &w,
        "failing",
        &failing_gate(
            r#""gate closed in ${abspath(path.module)}\ndb_password = hunter2-secret-value\n```\nEVIL after the fence\n</details><b>EVIL</b>\n\u001b[31mEVIL in red\u001b[0m\nthe last word""#,
        ),
    );
    let (check, writes) = plan_of(&w, n, &head).await;
    assert!(writes <= 3, "GitHub writes for one plan: {writes}");
    assert_eq!(check.conclusion.as_deref(), Some("failure"));
    assert!(
        check.title.contains("1 unit failed to plan"),
        "{}",
        check.title
    );
    assert!(
        check
            .summary
            .contains("last lines of each failed unit's log are below"),
        "{}",
        check.summary
    );

    let text = &check.text;
    assert!(text.chars().count() <= 65_535);
    assert!(text.contains("### `global/dns` failed to plan"), "{text}");
    assert!(text.contains("Resource precondition failed"), "{text}");
    assert!(text.contains("the last word"), "{text}");
    // Redacted like the log, and without the server's paths: the unit's directory reads
    // repo-relative, the plan file's run directory as `<run>`.
    assert!(!text.contains("hunter2-secret-value"), "{text}");
    assert!(text.contains("db_password = [redacted]"), "{text}");
    // (terraform wraps the message where the absolute path made it long)
    assert!(text.contains("./global/dns\ndb_password"), "{text}");
    assert!(text.contains("path.cwd is \"./global/dns\""), "{text}");
    assert!(
        text.contains("~/.terraformrc") || !text.contains(".terraformrc"),
        "{text}"
    );
    for path in server_paths(&w) {
        assert!(!text.contains(&path), "{path} in {text}");
    }
    // What the unit printed stays in its code block.
    let (code, outside) = markdown_code_and_rest(text);
    assert!(code.contains("EVIL after the fence"), "{code}");
    assert!(!outside.contains("EVIL"), "out of the block:\n{outside}");
    assert!(
        text.chars().all(|c| c == '\n' || !c.is_control()),
        "a control character in {text:?}"
    );

    let comment = &w.bot_texts(n)[0];
    assert!(
        comment.contains("- `global/dns` — `` `terraform plan` failed (exit code 1)"),
        "{comment}"
    );
    assert!(
        comment.contains("details in the `cascade` check"),
        "{comment}"
    );
    assert!(!comment.contains("full message"), "{comment}");
    assert!(!comment.contains("hunter2-secret-value"), "{comment}");
    for path in server_paths(&w) {
        assert!(!comment.contains(&path), "{path} in {comment}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_failure_keeps_the_most_recent_lines_within_githubs_limit() {
    let w = world().await;
    // 30,000 lines of error message, each with a fence in it.
    let (n, head) = open_changing_dns(
        &w,
        "huge",
        &failing_gate(
            r#"join("\n", flatten([for i in range(100) : [for j in range(300) : format("noise %05d ```", i * 300 + j)]]))"#,
        ),
    );
    let (check, writes) = plan_of(&w, n, &head).await;
    assert!(writes <= 3, "GitHub writes for one plan: {writes}");
    let text = &check.text;
    assert!(
        text.chars().count() <= 65_535,
        "{} characters",
        text.chars().count()
    );
    assert!(
        text.len() > 30_000,
        "the budget is used: {} bytes",
        text.len()
    );
    let (code, _) = markdown_code_and_rest(text);
    assert!(
        code.contains("noise 29999 ```"),
        "the most recent lines are kept"
    );
    assert!(!code.contains("noise 00000"), "the oldest are not");
    assert!(
        text.contains("*Earlier lines are not shown.*"),
        "the cut is marked"
    );
    // The comment names the failure in one line, terraform's error and where, and leaves
    // the log to the check.
    let comment = w.plan_comment(n);
    assert!(
        comment.contains("- `global/dns` — `` `terraform plan` failed (exit code 1): Error: Resource precondition failed (main.tf line ")
            && comment.contains("details in the `cascade` check"),
        "{comment}"
    );
    assert!(comment.len() < 2_000, "{} bytes", comment.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_base_config_is_located_and_linked_at_the_base_commit() {
    // A key appended to the example's `.cascade.yaml`.
    let w = world_with("unknown_setting: true\n").await;
    let line = config_line(w.work.path(), "unknown_setting");
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let before = w.fake.write_calls();
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the failed check and the comment", |w| {
        w.checks_done(&w.head_sha) && !w.bot_texts(n).is_empty()
    })
    .await;
    assert!(w.fake.write_calls() - before <= 3);
    let comment = &w.bot_texts(n)[0];
    let link = format!(
        "https://github.com/{REPO}/blob/{}/.cascade.yaml#L{line}",
        w.base_sha
    );
    assert!(
        comment.contains(&format!("line {line}, column 1")),
        "{comment}"
    );
    assert!(comment.contains(&format!("(<{link}>)")), "{comment}");
    assert!(
        comment.contains(&format!(
            ".cascade.yaml:{line}:1: unknown key `unknown_setting`"
        )),
        "{comment}"
    );
    assert!(comment.contains("comment `/plan`"), "{comment}");
    insta::assert_snapshot!("invalid_base_config", redacted(comment));
    let check = w.fake.check_runs(REPO, &w.head_sha)[0].current().clone();
    assert_eq!(check.conclusion.as_deref(), Some("failure"));
    assert_eq!(check.title, "cascade: .cascade.yaml is invalid");
    assert!(
        check
            .summary
            .starts_with("The plan could not run: `.cascade.yaml`"),
        "{}",
        check.summary
    );
    assert!(check.summary.contains(&link), "{}", check.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_plan_sends_no_check_text() {
    let w = world().await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    let (check, _) = plan_of(&w, n, &w.head_sha).await;
    assert_eq!(check.conclusion.as_deref(), Some("action_required"));
    assert_eq!(check.text, "");
    assert!(!w.bot_texts(n)[0].contains("cascade` check"));
}

/// A pull request whose unit names a dependency that is no unit (a typo in `config_path`):
/// the unit fails at that line before anything runs for it, its dependents are skipped,
/// the comment offers no `/apply`, the check fails, and `/apply` of the plan's id is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_dependency_fails_the_plan_and_its_apply_is_refused() {
    let w = world().await;
    let file = "dev/app/terragrunt.hcl";
    let text = git_out(w.work.path(), &["show", &format!("{}:{file}", w.base_sha)]);
    let typo = text.replace(
        "config_path = \"../database\"",
        "config_path = \"../databse\"",
    );
    assert_ne!(typo, text);
    let line = typo.lines().position(|l| l.contains("../databse")).unwrap() + 1;
    let (n, head) = w.open_adding("alice", "typo", &[(file, &typo)]);
    let (check, writes) = plan_of(&w, n, &head).await;
    assert!(writes <= 3, "GitHub writes for one plan: {writes}");
    assert_eq!(check.conclusion.as_deref(), Some("failure"));
    assert!(
        check.title.contains("1 unit failed to plan"),
        "{}",
        check.title
    );

    let comment = w.plan_comment(n);
    assert!(!comment.contains("/apply "), "an /apply line:\n{comment}");
    assert!(comment.contains("**Not ready to apply:**"), "{comment}");
    assert!(
        comment.contains(&format!(
            "- `dev/app` — `{file}:{line}: dev/app depends on dev/databse"
        )),
        "{comment}"
    );
    insta::assert_snapshot!("plan_with_a_missing_dependency", redacted(&comment));

    let id = support::plan_id_of(&comment);
    w.fake.set_permission(REPO, "bob", "write");
    w.fake.approve(REPO, n, "bob");
    w.comment(n, "bob", &format!("/apply {id}")).await;
    let reply = w.nth_reply(n, 2).await;
    assert!(reply.contains("did not plan"), "{reply}");
    assert!(reply.contains("dev/app"), "{reply}");
    assert!(!w.applied(n), "nothing applied");
}
