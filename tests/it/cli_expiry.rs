//! Plan expiry through `cascade plan` and `cascade apply` with the real terraform: the
//! CLI reads `plan_ttl` from the working tree's `.cascade.yaml` (the default without one)
//! and refuses a plan older than it, applying nothing.

use crate::support;

use support::hostile::resource;
use support::{git, run_in, write_file};

#[test]
fn cascade_apply_refuses_a_plan_older_than_the_working_trees_plan_ttl() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    let config = "environments:\n  live:\n    path: live\n    executor: terraform\nplan_ttl: 1s\n";
    write_file(&dir, ".cascade.yaml", config);
    write_file(&dir, "live/db/terragrunt.hcl", "");
    write_file(&dir, "live/db/main.tf", &resource("db"));
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    let cascade = |args: &[&str]| run_in(env!("CARGO_BIN_EXE_cascade"), &dir, args);

    let planned = cascade(&["plan", "--changed", "live/db/main.tf"]);
    let comment = String::from_utf8_lossy(&planned.stdout).into_owned();
    assert!(planned.status.success(), "{comment}");
    let id = support::plan_id_of(&comment);
    // Ages are whole seconds: two of them are past a ttl of one.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let refused = cascade(&["apply", &id]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("cascade: plan {id} is ")),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "old, older than `plan_ttl` (1 second); run `cascade plan` again and apply the new id"
        ),
        "{stderr}"
    );
    assert!(
        !dir.join("live/db/terraform.tfstate").exists(),
        "nothing applied"
    );
}
