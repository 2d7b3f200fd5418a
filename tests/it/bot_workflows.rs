//! Workflows (`.cascade.yaml` `workflows:`, the default branch's) in the server, over the
//! fake GitHub with the real terraform and the real sandbox: a `post_plan` step's Markdown
//! output in its unit's section, inert, with its whole output in the check run; a failing
//! `pre_apply` that stops its unit and skips its dependents without touching state; a
//! step reading the plan JSON from its standard input (a pipe), whose digest matches the
//! plan's own, with no copy of the JSON on disk; a step reading the server's database,
//! refused; a workflow defining a credential, refused without quoting it.

use crate::support::bot_world::{World, world_with};
use sha2::{Digest, Sha256};

/// Approves pull request `n` and comments `/apply <id>` as bob: the apply result.
async fn apply(w: &World, n: u64) -> String {
    w.approve_and_apply(n).await;
    w.apply_comment(n)
}

const MARKDOWN_STEP: &str = r#"
workflows:
  - name: report
    units: ["global/**"]
    post_plan:
      - run:
          name: cost
          command: [sh, -c, "printf '## Cost report\n\nPinging @acme/admins about #12, see [the bill](https://evil.example/x) and ![pixel](https://evil.example/p.png)\n\n| unit | cost |\n|---|---|\n| dns | 1 |\n\n<img src=x onerror=alert(1)>\nFULL-OUTPUT-MARKER\n'"]
          visible_on: always
          format: markdown
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_plan_steps_markdown_is_shown_inert_in_its_units_section_and_whole_in_the_check() {
    let w = world_with(MARKDOWN_STEP).await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    assert!(
        plan.contains("<code>cost</code> (post_plan) — passed"),
        "{plan}"
    );
    assert!(plan.contains("Cost report"), "{plan}");
    // Inert: no heading of its own, no mention, no link, no image, no HTML.
    assert!(!plan.contains("## Cost report"), "{plan}");
    assert!(!plan.contains("@acme/admins"), "{plan}");
    assert!(!plan.contains("](https://evil"), "{plan}");
    assert!(!plan.contains("![pixel]"), "{plan}");
    // Raw HTML is shown as code, never as an element.
    assert!(
        plan.contains("```html\n<img src=x onerror=alert(1)>"),
        "{plan}"
    );
    assert_eq!(plan.matches("<img").count(), 1, "{plan}");
    // The step is in the section of the unit it ran for.
    let section = plan
        .find("<code>global/dns</code> —")
        .expect("global/dns's section");
    assert!(plan[section..].contains("<code>cost</code>"), "{plan}");
    let check = w.check_now(&w.head_sha);
    assert!(check.text.contains("Workflow steps"), "{}", check.text);
    assert!(check.text.contains("FULL-OUTPUT-MARKER"), "{}", check.text);
    w.finish().await;
}

const FAILING_PRE_APPLY: &str = r#"
workflows:
  - name: guarded
    units: ["global/dns"]
    pre_apply:
      - run:
          name: guard
          command: [sh, -c, "echo refusing to apply; exit 3"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_pre_apply_stops_its_unit_and_skips_its_dependents_without_touching_state() {
    let w = world_with(FAILING_PRE_APPLY).await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let result = apply(&w, n).await;
    assert!(
        result.contains("step `guard` (pre_apply) failed with exit code 3"),
        "{result}"
    );
    assert!(
        w.applied_units(n).iter().all(|u| u != "global/dns"),
        "{result}"
    );
    assert!(result.contains("skipped"), "{result}");
    assert!(result.contains("global/dns failed"), "{result}");
    // Nothing was applied for it: no state was written.
    let dns = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/global/dns/terraform.tfstate");
    assert!(!dns.exists(), "global/dns's state was written");
    w.finish().await;
}

const PLAN_JSON_STEP: &str = r#"
workflows:
  - name: digest
    units: ["global/dns"]
    post_plan:
      - run:
          name: digest
          command: [sh, -c, "printf 'digest=%s\n' \"$(sha256sum | cut -d' ' -f1)\"; printf 'planfile=%s\n' \"$CASCADE_PLANFILE\""]
          stdin: plan_json
          visible_on: always
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_reads_the_plan_json_from_a_pipe_and_no_file_holds_it() {
    let w = world_with(PLAN_JSON_STEP).await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    assert!(
        plan.contains("<code>digest</code> (post_plan) — passed"),
        "{plan}"
    );
    let check = w.check_now(&w.head_sha);
    let field = |name: &str| {
        check
            .text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {}", check.text))
            .to_string()
    };
    let digest = field("digest");
    // The step is told the plan file's path; the check shows it by its label only.
    assert_eq!(field("planfile"), "$CASCADE_PLANFILE");
    let planfile = walkdir::WalkDir::new(w.data.path().join("runs"))
        .into_iter()
        .map(Result::unwrap)
        .find(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("global--dns") && name.ends_with(".tfplan")
        })
        .expect("the unit's saved plan")
        .into_path();
    // cascade's own: `terraform show -json` of the plan file the step was told about.
    let unit = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/global/dns");
    let shown = std::process::Command::new("terraform")
        .args(["show", "-json", "-no-color"])
        .arg(&planfile)
        .current_dir(&unit)
        .output()
        .unwrap();
    assert!(shown.status.success(), "{shown:?}");
    assert_eq!(digest, hex::encode(Sha256::digest(&shown.stdout)));
    // No file under the data directory holds the JSON (the binary plan is not JSON).
    let marker = b"\"format_version\"";
    for entry in walkdir::WalkDir::new(w.data.path())
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
    {
        let bytes = std::fs::read(entry.path()).unwrap();
        let holds = bytes.windows(marker.len()).any(|b| b == marker);
        let rel = entry.path().strip_prefix(w.data.path()).unwrap();
        // terraform's own state files are JSON with a `format_version`-free shape;
        // provider caches are binaries.
        assert!(
            !holds || rel.to_string_lossy().ends_with(".tfstate"),
            "{} holds plan JSON",
            rel.display()
        );
    }
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_reads_the_servers_data_is_refused_by_the_sandbox() {
    let w = world_with(
        r#"
workflows:
  - name: thief
    units: ["global/dns"]
    post_plan:
      - run:
          name: thief
          command: [sh, -c, "d=$(dirname \"$CASCADE_RESULTS_FILE\")/../../../..; ls \"$d\"; cat \"$d/cascade.db\" | head -c 100; exit 0"]
          visible_on: always
"#,
    )
    .await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&w.head_sha)).await;
    let plan = w.plan_comment(n);
    let check = w.check_now(&w.head_sha);
    for text in [&plan, &check.text] {
        assert!(!text.contains("SQLite format"), "{text}");
        assert!(text.contains("Permission denied"), "{text}");
    }
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_that_defines_a_credential_is_refused_and_never_quoted() {
    let secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY";
    let w = world_with(&format!(
        "workflows:\n  - name: leaky\n    env:\n      - {{name: AWS_SECRET_ACCESS_KEY, value: {secret}}}\n"
    ))
    .await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.send_pr(n, "opened").await;
    w.until("the failed check and the comment", |w| {
        w.checks_done(&w.head_sha) && !w.bot_texts(n).is_empty()
    })
    .await;
    let comment = &w.bot_texts(n)[0];
    assert!(comment.contains("AWS_SECRET_ACCESS_KEY"), "{comment}");
    assert!(comment.contains("from_server"), "{comment}");
    assert!(!comment.contains(secret), "{comment}");
    let check = w.check_now(&w.head_sha);
    assert_eq!(check.conclusion.as_deref(), Some("failure"));
    let all = format!("{}{}{}", check.title, check.summary, check.text);
    assert!(!all.contains(secret), "{all}");
    // Nothing ran: no run directory was made.
    assert!(!w.data.path().join("runs").exists());
    w.finish().await;
}

const TWO_STAGES: &str = r#"
workflows:
  - name: crd_two_stage
    units: ["global/crd"]
    apply: {targets: [terraform_data.crds]}
"#;

/// A unit whose `app` can only be applied once `crds` is: its provisioner checks the mark
/// `crds` leaves.
const CRD_UNIT: &str = r#"terraform {
  backend "local" {}
}

resource "terraform_data" "crds" {
  input = "crds"
  provisioner "local-exec" {
    command = "touch crds-installed"
  }
}

resource "terraform_data" "app" {
  input = "app"
  provisioner "local-exec" {
    command = "test -f crds-installed"
  }
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_stage_apply_applies_exactly_the_reviewed_resources_targets_first() {
    let w = world_with(TWO_STAGES).await;
    let (n, head) = w.open_adding(
        "alice",
        "crds",
        &[
            ("global/crd/terragrunt.hcl", ""),
            ("global/crd/main.tf", CRD_UNIT),
        ],
    );
    w.send_pr(n, "opened").await;
    w.until("the plan", |w| w.checks_done(&head)).await;
    let plan = w.plan_comment(n);
    assert!(plan.contains("| `global/crd` | 2 to add |"), "{plan}");
    let result = apply(&w, n).await;
    assert_eq!(w.applied_units(n), ["global/crd"], "{result}");
    assert!(result.contains("2 added"), "{result}");
    let unit = w
        .data
        .path()
        .join("workspaces/checkouts/acme/infra/pr-1/global/crd");
    let state = std::fs::read_to_string(unit.join("terraform.tfstate")).unwrap();
    assert!(
        state.contains("\"crds\"") && state.contains("\"app\""),
        "{state}"
    );
    // Two applies of one resource each, the targets' first.
    let log: String = walkdir::WalkDir::new(w.data.path().join("runs"))
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".log") && name.contains("_global--crd-")
        })
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    let stages: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("$ terraform apply") || l.starts_with("Apply complete!"))
        .collect();
    assert_eq!(stages.len(), 4, "{log}");
    assert!(stages[0].contains(".stage1.tfplan"), "{log}");
    assert!(
        stages[1].starts_with("Apply complete! Resources: 1 added"),
        "{log}"
    );
    assert!(
        stages[3].starts_with("Apply complete! Resources: 1 added"),
        "{log}"
    );
    w.finish().await;
}
