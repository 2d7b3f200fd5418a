//! The process executor with stand-in binaries (shell scripts named like the
//! tool): command lines, logs and redaction, the plan JSON kept out of every
//! file, timeouts that end in SIGTERM then SIGKILL, and applies that a cancel
//! does not stop.

use cascade::config::Executor as Tool;
use cascade::exec::{ExecError, Executor, ProcessExecutor, UnitJob};
use cascade::unit::UnitPath;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Writes an executable script standing in for terraform.
fn tool(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("fake-terraform");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn job(dir: &Path, timeout: Duration) -> UnitJob {
    let unit_dir = dir.join("unit");
    std::fs::create_dir_all(unit_dir.join(".terraform")).unwrap();
    UnitJob {
        unit: UnitPath::new("live/app"),
        dir: unit_dir,
        tool: Tool::Terraform,
        plan_file: dir.join("run/plans/live--app.tfplan"),
        log: dir.join("run/001_live--app.log"),
        destroy: false,
        init_args: vec![],
        timeout,
    }
}

#[tokio::test]
async fn plan_logs_redacted_output_and_keeps_the_plan_json_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tool(
        tmp.path(),
        r#"case "$1" in
  plan) echo "  + db_password = \"hunter2\""; echo "Plan: 1 to add"; touch "${6#-out=}"; exit 2;;
  show) echo '{"format_version":"1.2","planned_values":{},"resource_changes":[],"secret":"s3cr3t-in-json"}'; echo "show stderr" >&2;;
esac"#,
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let job = job(tmp.path(), Duration::from_secs(30));
    let json = exec.plan(&job, &CancellationToken::new()).await.unwrap();
    assert!(String::from_utf8_lossy(&json).contains("s3cr3t-in-json"));
    let log = std::fs::read_to_string(&job.log).unwrap();
    assert!(
        log.contains("$ ")
            && log
                .contains(" plan -input=false -no-color -lock-timeout=5m -detailed-exitcode -out="),
        "{log}"
    );
    assert!(
        log.contains("db_password = [redacted]") && !log.contains("hunter2"),
        "{log}"
    );
    assert!(log.contains("show stderr"));
    // The plan JSON is never written anywhere: not to the log, not next to the plan file.
    for entry in walkdir::WalkDir::new(tmp.path())
        .into_iter()
        .filter_entry(|e| e.path() != script)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
    {
        let text = std::fs::read(entry.path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&text).contains("s3cr3t-in-json"),
            "{} holds the plan JSON",
            entry.path().display()
        );
    }
}

#[tokio::test]
async fn an_empty_plan_needs_no_show() {
    let tmp = tempfile::tempdir().unwrap();
    let shown = tmp.path().join("show-ran");
    let script = tool(
        tmp.path(),
        &format!(
            "case \"$1\" in show) touch {};; esac; exit 0",
            shown.display()
        ),
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let json = exec
        .plan(
            &job(tmp.path(), Duration::from_secs(30)),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let summary = cascade::plan::PlanSummary::from_show_json(&json).unwrap();
    assert!(summary.is_empty());
    assert_eq!(summary.fingerprint, cascade::plan::Fingerprint::empty());
    assert!(!shown.exists());
}

#[tokio::test]
async fn a_failing_command_reports_its_last_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tool(
        tmp.path(),
        "echo 'Error: Unsupported argument' >&2; echo 'token=abc123' >&2; exit 1",
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let err = exec
        .plan(
            &job(tmp.path(), Duration::from_secs(30)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    match err {
        ExecError::Failed { code, excerpt, .. } => {
            assert_eq!(code, 1);
            assert!(excerpt.contains("Error: Unsupported argument"), "{excerpt}");
            assert!(!excerpt.contains("abc123"), "{excerpt}");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn a_missing_binary_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, "/nonexistent/terraform");
    let err = exec
        .plan(
            &job(tmp.path(), Duration::from_secs(5)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is it installed"), "{err}");
}

#[tokio::test]
async fn a_timed_out_plan_is_stopped_with_sigterm_then_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("got-term");
    // Ignores SIGTERM (records it), so only SIGKILL ends it.
    let script = tool(
        tmp.path(),
        &format!(
            "trap 'touch {}' TERM; while true; do sleep 0.1; done",
            marker.display()
        ),
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_grace(Duration::from_millis(500));
    let started = Instant::now();
    let err = exec
        .plan(
            &job(tmp.path(), Duration::from_millis(300)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::TimedOut { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(300));
    assert!(marker.exists(), "SIGTERM came first");
}

#[tokio::test]
async fn cancel_stops_a_plan_but_never_a_running_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let done = tmp.path().join("applied");
    let script = tool(tmp.path(), &format!("sleep 1; touch {}", done.display()));
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_grace(Duration::from_millis(200));
    let job = job(tmp.path(), Duration::from_secs(30));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = exec.plan(&job, &cancel).await.unwrap_err();
    assert!(matches!(err, ExecError::Cancelled), "{err}");
    // The apply's stop token is only a shutdown; an ordinary cancel has no hold on it.
    exec.apply(&job, &CancellationToken::new()).await.unwrap();
    assert!(done.exists());
    // On shutdown, a running apply gets its grace period and is then stopped.
    std::fs::remove_file(&done).unwrap();
    let shutdown = CancellationToken::new();
    shutdown.cancel();
    let err = exec.apply(&job, &shutdown).await.unwrap_err();
    assert!(matches!(err, ExecError::Cancelled), "{err}");
    assert!(!done.exists());
}
