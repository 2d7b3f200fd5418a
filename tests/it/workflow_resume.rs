//! Workflow steps across a crash, through the CLI with the real terraform: `cascade apply`
//! killed while a unit's second `post_apply` step runs; the next `cascade apply` of the
//! same id neither applies the unit again nor runs its finished first step again, and
//! runs the unfinished one. And a failing step is not retried, however transient its
//! output looks: retries are for the built-in plan and apply.

use crate::plan_apply_e2e::commit_modules;
use crate::support;
use serde_json::Value as Json;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const CONFIG: &str = r#"modules:
  - path: app
workflows:
  - name: notify
    units: [app]
    post_apply:
      - run:
          name: once
          command: [sh, -c, "echo ran >> post-apply-ran"]
      - run:
          name: slow
          command: [sh, -c, "if [ -f second-try ]; then echo second; exit 0; fi; touch second-try; sleep 6"]
"#;

fn cascade(dir: &Path, args: &[&str]) -> std::process::Output {
    support::run_in(env!("CARGO_BIN_EXE_cascade"), dir, args)
}

/// A repository of one module, `app`, with `config` as its `.cascade.yaml`.
fn app_repo(config: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("app")).unwrap();
    std::fs::write(
        dir.join("app/main.tf"),
        "terraform {\n  backend \"local\" {}\n}\n\nresource \"terraform_data\" \"unit\" {\n  input = \"app\"\n}\n",
    )
    .unwrap();
    commit_modules(dir, config);
    tmp
}

#[test]
fn a_restarted_apply_does_not_run_a_finished_post_apply_step_again() {
    let tmp = app_repo(CONFIG);
    let dir = tmp.path();
    let out = cascade(
        dir,
        &["plan", "--format", "json", "--changed", "app/main.tf"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Json = support::stdout_json(&out);
    let id = plan["plan_id"].as_str().unwrap().to_string();

    let mut first = Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["apply", &id, "--format", "json"])
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !dir.join("app/second-try").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the second step never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Killed while the second post_apply step runs: the unit is applied, step one finished.
    first.kill().unwrap();
    first.wait().unwrap();

    let out = cascade(dir, &["apply", &id, "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ran = std::fs::read_to_string(dir.join("app/post-apply-ran")).unwrap();
    assert_eq!(ran, "ran\n", "the finished step ran again");
    let log: String = walkdir::WalkDir::new(dir.join(".cascade/runs"))
        .into_iter()
        .filter_map(Result::ok)
        // `<wave>_app-<digest>.log`
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".log") && name.contains("_app-")
        })
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(log.matches("Apply complete!").count(), 1, "{log}");
    assert!(log.contains("second"), "the unfinished step ran: {log}");
}

#[test]
fn a_failed_step_is_never_retried_even_when_its_output_looks_transient() {
    let tmp = app_repo(
        r#"modules:
  - path: app
retries: {attempts: 3, base: 10ms}
workflows:
  - name: flaky
    units: [app]
    pre_plan:
      - run:
          name: flaky
          command: [sh, -c, "echo try >> tries; echo 'Error acquiring the state lock'; exit 1"]
"#,
    );
    let dir = tmp.path();
    let out = cascade(
        dir,
        &["plan", "--format", "json", "--changed", "app/main.tf"],
    );
    assert!(!out.status.success(), "the unit fails");
    let plan: Json = support::stdout_json(&out);
    let unit = &plan["units"][0];
    assert_eq!(unit["status"], "failed", "{plan}");
    assert_eq!(
        unit["detail"], "step `flaky` (pre_plan) failed with exit code 1",
        "{plan}"
    );
    assert_eq!(unit["retried"], 0, "{plan}");
    assert_eq!(
        std::fs::read_to_string(dir.join("app/tries")).unwrap(),
        "try\n",
        "run once, not retried"
    );
    // Nothing of terraform ran for it: the step failed first.
    assert!(!dir.join("app/.terraform").exists());
}
