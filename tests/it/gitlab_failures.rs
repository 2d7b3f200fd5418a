//! Failures on GitLab, end to end over the fake GitLab with the real terraform. A commit
//! status has a one-line description and no text, so the failed unit's message stays in
//! the note (a collapsed block, as before), and an invalid `.cascade.yaml` on the target
//! branch is linked at the base commit with GitLab's `/-/blob/` path.

use crate::support;
use crate::support::gitlab_world;

use gitlab_world::{AUTHOR, PROJECT, World, world, world_with};

const UNIT_FILE: &str = "global/dns/main.tf";

async fn planned(w: &World, iid: u64, head: &str) -> u64 {
    let before = w.fake.write_calls();
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the note and the finished status", |w| {
        w.status_done(head) && !w.bot_texts(iid).is_empty()
    })
    .await;
    w.fake.write_calls() - before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_that_fails_to_plan_keeps_its_message_in_the_note() {
    let w = world().await;
    let dir = w.work.path();
    support::git(dir, &["checkout", "-q", "-B", "failing", &w.base_sha]);
    let path = dir.join(UNIT_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    let gate = r#"resource "terraform_data" "gate" {
  input = "x"
  lifecycle {
    precondition {
      condition     = length(path.cwd) < 0
      error_message = "gate closed in ${abspath(path.module)}"
    }
  }
}"#;
    std::fs::write(&path, format!("{text}\n{gate}\n")).unwrap();
    support::git(dir, &["commit", "-qam", "a failing change"]);
    let origin = w.origin.to_str().unwrap().to_string();
    support::git(dir, &["push", "-q", "--force", &origin, "failing:failing"]);
    let head = support::git(dir, &["rev-parse", "HEAD"]);
    let iid = w.open_mr_changing(AUTHOR, "failing", &head, false, UNIT_FILE);
    let writes = planned(&w, iid, &head).await;
    assert!(writes <= 3, "GitLab writes for one plan: {writes}");
    assert_eq!(w.status_now(&head).as_deref(), Some("failed"));
    let note = &w.bot_texts(iid)[0];
    assert!(
        note.contains("- `global/dns` — `` `terraform plan` failed"),
        "{note}"
    );
    assert!(
        note.contains("<summary><code>global/dns</code> — full message"),
        "{note}"
    );
    assert!(note.contains("Resource precondition failed"), "{note}");
    assert!(!note.contains("cascade` check"), "{note}");
    // The unit's directory reads repo-relative; the data directory is nowhere.
    assert!(note.contains("./global/dns"), "{note}");
    assert!(
        !note.contains(&w.data.path().display().to_string()),
        "{note}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_base_config_is_linked_with_gitlabs_blob_path() {
    let w = world_with("unknown_setting: true\n").await;
    let line = support::config_line(w.work.path(), "unknown_setting");
    let iid = w.open_mr(AUTHOR, "feature", &w.head_sha, false);
    let writes = planned(&w, iid, &w.head_sha).await;
    assert!(writes <= 3, "GitLab writes: {writes}");
    assert_eq!(w.status_now(&w.head_sha).as_deref(), Some("failed"));
    let note = &w.bot_texts(iid)[0];
    let link = format!(
        "{}/{PROJECT}/-/blob/{}/.cascade.yaml#L{line}",
        w.fake.url(),
        w.base_sha
    );
    assert!(note.contains(&format!("(<{link}>)")), "{note}");
    assert!(note.contains(&format!("line {line}, column 1")), "{note}");
    assert!(note.contains("comment `cascade plan`"), "{note}");
}
