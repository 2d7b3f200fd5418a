//! The process executor with stand-in binaries (shell scripts named like the
//! tool): command lines, logs and redaction, the plan JSON kept out of every
//! file, timeouts that end in SIGTERM then SIGKILL to the whole process group,
//! applies that a cancel does not stop, applies that outlive the executor and
//! are re-attached, and the environment children get.

use cascade::exec::{ExecError, Executor, PlanLimits, ProcessExecutor, Resumed, UnitJob};
use cascade::unit::Tool;
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
    std::fs::create_dir_all(&unit_dir).unwrap();
    UnitJob {
        unit: UnitPath::new("live/app"),
        dir: unit_dir,
        root: dir.to_path_buf(),
        repo: "acme/infra".into(),
        sources: vec![],
        tool: Tool::Terraform,
        plan_file: dir.join("run/plans/live--app.tfplan"),
        log: dir.join("run/001_live--app.log"),
        work: dir.join("run/work/live--app"),
        destroy: false,
        init_args: vec![],
        timeout,
        init_timeout: timeout,
        phase: cascade::exec::Phase::Plan,
        workflow: None,
        plan_targets: Vec::new(),
        state_change: None,
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
    assert!(String::from_utf8_lossy(json.bytes()).contains("s3cr3t-in-json"));
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
    let summary = cascade::plan::PlanSummary::from_show_json(json.bytes()).unwrap();
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
    assert!(
        !err.to_string().contains("/nonexistent"),
        "no server path in a message: {err}"
    );
}

#[tokio::test]
async fn a_timed_out_plan_is_stopped_with_sigterm_then_sigkill() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("unit/got-term");
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
    let done = tmp.path().join("unit/applied");
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

/// A stand-in that prints 16 KiB, then rests 10 ms, 2,560 times (40 MiB,
/// about a minute) and then touches `finished`: endless enough for a 1 MiB
/// cap, and bounded, so a broken cap cannot fill the disk. `trap` runs first.
fn long_printer(dir: &Path, trap: &str, finished: &Path) -> PathBuf {
    tool(
        dir,
        &format!(
            "{trap}\ni=0; while [ $i -lt 2560 ]; do printf '%016383d\\n' 0; sleep 0.01; i=$((i+1)); done; touch {}",
            finished.display()
        ),
    )
}

#[tokio::test]
async fn a_plan_printing_without_end_is_stopped_at_the_output_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let finished = tmp.path().join("finished");
    let script = long_printer(tmp.path(), "", &finished);
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_max_output(1 << 20);
    let job = job(tmp.path(), Duration::from_secs(300));
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ExecError::OutputTooLarge { limit_mib: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("more than 1 MiB"), "{err}");
    assert!(!finished.exists(), "stopped, not run to its end");
    // The raw output is gone; the log holds what was written before the stop.
    assert!(
        std::fs::read_dir(&job.work).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".out"))
    );
    let log = std::fs::metadata(&job.log).unwrap().len();
    assert!(log > 1 << 20 && log < 20 << 20, "log of {log} bytes");
}

#[tokio::test]
async fn a_plan_that_ignores_sigterm_and_keeps_printing_is_killed_before_its_grace_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let finished = tmp.path().join("finished");
    let script = long_printer(tmp.path(), "trap '' TERM", &finished);
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_max_output(1 << 20)
        .with_grace(Duration::from_secs(120));
    let started = Instant::now();
    let err = exec
        .plan(
            &job(tmp.path(), Duration::from_secs(300)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::OutputTooLarge { .. }), "{err}");
    assert!(!finished.exists(), "killed, not run to its end");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "stopped after {:?}, not after the 120 s grace",
        started.elapsed()
    );
}

#[tokio::test]
async fn an_apply_is_never_stopped_for_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    // Reviewed code: 3 MiB of output over a 1 MiB cap, then success.
    let script = tool(
        tmp.path(),
        "i=0; while [ $i -lt 3072 ]; do printf '%01023d\\n' 0; i=$((i+1)); done",
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_max_output(1 << 20);
    let job = job(tmp.path(), Duration::from_secs(120));
    exec.apply(&job, &CancellationToken::new()).await.unwrap();
    assert!(std::fs::metadata(&job.log).unwrap().len() >= 3 << 20);
}

/// Polls `cond` for up to 10 s.
pub(crate) async fn until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..200 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

pub(crate) fn alive(pid: i32) -> bool {
    // A zombie is gone for our purposes: look at its state.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn a_timeout_stops_the_whole_process_group() {
    let tmp = tempfile::tempdir().unwrap();
    let grandchild = tmp.path().join("unit/grandchild.pid");
    // terragrunt starts terraform, terraform starts providers: the stand-in starts a
    // grandchild that would outlive a signal sent to the child alone.
    let script = tool(
        tmp.path(),
        &format!("sleep 60 & echo $! > {}; wait", grandchild.display()),
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_grace(Duration::from_millis(300));
    let err = exec
        .plan(
            &job(tmp.path(), Duration::from_millis(500)),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::TimedOut { .. }), "{err}");
    let pid: i32 = std::fs::read_to_string(&grandchild)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    until("the grandchild to be gone", || !alive(pid)).await;
}

#[tokio::test]
async fn an_apply_outlives_its_executor_and_is_re_attached() {
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("release");
    let applied = tmp.path().join("unit/applied");
    // Waits for the test to release it, prints a PEM block and a secret, then succeeds.
    let script = tool(
        tmp.path(),
        &format!(
            "echo 'apply started'; while [ ! -e {release} ]; do sleep 0.05; done
printf '%s\\n' '-----BEGIN RSA PRIVATE' 'KEY-----' 'MIIEpAIBAAKCAQEAwrappedkeymaterial' '-----END RSA PRIVATE KEY-----'
echo \"url postgres://app:pg-pass-123456@db:5432\"; touch {applied}; echo 'Apply complete!'",
            release = release.display(),
            applied = applied.display()
        ),
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let job = job(tmp.path(), Duration::from_secs(30));
    // Nothing was started yet: nothing to resume.
    assert!(matches!(
        exec.resume_apply(&job, &CancellationToken::new())
            .await
            .unwrap(),
        Resumed::Nothing
    ));
    // "Cascade dies": the apply's future is dropped mid-run.
    let running = tokio::time::timeout(
        Duration::from_millis(500),
        exec.apply(&job, &CancellationToken::new()),
    )
    .await;
    assert!(running.is_err(), "still running when cascade went away");
    let out = job.work.join("apply.out");
    assert!(out.is_file(), "its output goes to a file, not to a pipe");
    let mode = std::fs::metadata(&job.work).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the working directory is private");
    // While it runs, a resume that may not wait says so and leaves it running.
    let stop = CancellationToken::new();
    stop.cancel();
    assert!(matches!(
        exec.resume_apply(&job, &stop).await.unwrap(),
        Resumed::Running
    ));
    std::fs::write(&release, "").unwrap();
    let resumed = exec
        .resume_apply(&job, &CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(resumed, Resumed::Finished(Ok(()))), "{resumed:?}");
    assert!(applied.exists());
    let log = std::fs::read_to_string(&job.log).unwrap();
    assert!(log.contains("Apply complete!"), "{log}");
    assert!(
        !log.contains("wrappedkeymaterial") && !log.contains("pg-pass-123456"),
        "{log}"
    );
    assert!(log.contains("postgres://[redacted]@db:5432"), "{log}");
    // The raw output is gone once consumed; a second resume finds nothing.
    assert!(!out.exists());
    assert!(matches!(
        exec.resume_apply(&job, &CancellationToken::new())
            .await
            .unwrap(),
        Resumed::Nothing
    ));
}

#[tokio::test]
async fn a_re_attached_apply_reports_its_failure_or_that_its_end_is_unknown() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tool(
        tmp.path(),
        "sleep 0.5; echo 'Error: creating thing: boom'; exit 3",
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let job = job(tmp.path(), Duration::from_secs(30));
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        exec.apply(&job, &CancellationToken::new()),
    )
    .await;
    assert!(dropped.is_err());
    match exec
        .resume_apply(&job, &CancellationToken::new())
        .await
        .unwrap()
    {
        Resumed::Finished(Err(ExecError::Failed { code, excerpt, .. })) => {
            assert_eq!(code, 3);
            assert!(excerpt.contains("Error: creating thing"), "{excerpt}");
        }
        other => panic!("{other:?}"),
    }
    // Killed outright (the whole group, wrapper included): no exit status, so unknown.
    let pid_file = job.work.join("running.pid");
    let script = tool(tmp.path(), "sleep 30");
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let dropped = tokio::time::timeout(
        Duration::from_millis(300),
        exec.apply(&job, &CancellationToken::new()),
    )
    .await;
    assert!(dropped.is_err());
    let group: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(group),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let resumed = exec
        .resume_apply(&job, &CancellationToken::new())
        .await
        .unwrap();
    assert!(matches!(resumed, Resumed::Unknown), "{resumed:?}");
}

#[tokio::test]
async fn a_new_command_waits_for_one_an_earlier_executor_left_running() {
    let tmp = tempfile::tempdir().unwrap();
    let order = tmp.path().join("unit/order");
    let script = tool(
        tmp.path(),
        &format!(
            "case \"$1\" in
  apply) echo apply-start >> {o}; sleep 1; echo apply-end >> {o};;
  plan) echo plan >> {o}; exit 0;;
esac",
            o = order.display()
        ),
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let job = job(tmp.path(), Duration::from_secs(30));
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        exec.apply(&job, &CancellationToken::new()),
    )
    .await;
    assert!(dropped.is_err());
    exec.plan(&job, &CancellationToken::new()).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(&order).unwrap(),
        "apply-start\napply-end\nplan\n"
    );
}

#[tokio::test]
async fn children_get_the_allow_listed_environment_only_and_their_secrets_are_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("unit/env");
    let script = tool(
        tmp.path(),
        &format!(
            "env > {}; echo \"connecting with $TF_VAR_db_password\"; echo 'Error: no' >&2; exit 1",
            dump.display()
        ),
    );
    let parent = [
        ("PATH", std::env::var("PATH").unwrap()),
        ("HOME", "/home/cascade".into()),
        ("LC_ALL", "C.UTF-8".into()),
        ("TF_VAR_db_password", "tf-var-secret-value".into()),
        ("TF_TOKEN_app_terraform_io", "tf-token-value-1234".into()),
        ("AWS_PROFILE", "prod".into()),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/creds.json".into()),
        ("HTTPS_PROXY", "http://proxy:3128".into()),
        (
            "CASCADE_GITHUB_WEBHOOK_SECRET",
            "webhook-secret-value".into(),
        ),
        ("CASCADE_PASS_ENV", "CASCADE_GITHUB_WEBHOOK_SECRET".into()),
        ("DATABASE_URL", "postgres://u:p@db".into()),
        ("VAULT_ADDR", "https://vault:8200".into()),
    ]
    .map(|(k, v)| (k.into(), v.into()));
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_environment(
            parent,
            &["VAULT_ADDR".into(), "CASCADE_GITHUB_WEBHOOK_SECRET".into()],
        );
    let job = job(tmp.path(), Duration::from_secs(30));
    let err = exec
        .plan(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    let env = std::fs::read_to_string(&dump).unwrap();
    let names: std::collections::BTreeSet<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    for present in [
        "PATH",
        "HOME",
        "LC_ALL",
        "TF_VAR_db_password",
        "TF_TOKEN_app_terraform_io",
        "AWS_PROFILE",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "HTTPS_PROXY",
        "VAULT_ADDR",
        "TF_IN_AUTOMATION",
        "CHECKPOINT_DISABLE",
        "TF_PLUGIN_CACHE_DIR",
    ] {
        assert!(names.contains(present), "{present} missing: {names:?}");
    }
    for absent in [
        "CASCADE_GITHUB_WEBHOOK_SECRET",
        "CASCADE_PASS_ENV",
        "DATABASE_URL",
    ] {
        assert!(!names.contains(absent), "{absent} leaked: {names:?}");
    }
    // The TF_VAR_ value the child printed is neither in the log nor in the excerpt.
    let log = std::fs::read_to_string(&job.log).unwrap();
    assert!(!log.contains("tf-var-secret-value"), "{log}");
    assert!(log.contains("connecting with [redacted]"), "{log}");
    assert!(!err.to_string().contains("tf-var-secret-value"), "{err}");
}

#[tokio::test]
async fn a_registered_secret_and_a_wrapped_key_never_reach_the_log_or_the_excerpt() {
    let tmp = tempfile::tempdir().unwrap();
    cascade::redact::register_secret("installation-token-abcdef0123");
    let script = tool(
        tmp.path(),
        r#"echo 'cloning with installation-token-abcdef0123'
echo '│ Error: invalid value "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBxkeymaterial\n-----END EC PRIVATE KEY-----\n"' >&2
echo '      -----BEGIN OPENSSH PRIVATE KEY-----'
echo '      b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQsecondkey'
echo '      -----END OPENSSH PRIVATE KEY-----'
exit 1"#,
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string());
    let job = job(tmp.path(), Duration::from_secs(30));
    let err = exec
        .apply(&job, &CancellationToken::new())
        .await
        .unwrap_err();
    let log = std::fs::read_to_string(&job.log).unwrap();
    for text in [log.as_str(), &err.to_string()] {
        assert!(!text.contains("installation-token-abcdef0123"), "{text}");
        assert!(!text.contains("keymaterial"), "{text}");
        assert!(!text.contains("secondkey"), "{text}");
        assert!(text.contains("[redacted PEM block]"), "{text}");
    }
    assert!(!job.work.join("apply.out").exists(), "raw output deleted");
}

#[tokio::test]
async fn a_plan_whose_future_is_dropped_is_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let planned = tmp.path().join("planned");
    let script = tool(
        tmp.path(),
        &format!("sleep 1; touch {}; exit 0", planned.display()),
    );
    let exec = ProcessExecutor::new(tmp.path().join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_grace(Duration::from_millis(200));
    let job = job(tmp.path(), Duration::from_secs(30));
    let dropped = tokio::time::timeout(
        Duration::from_millis(300),
        exec.plan(&job, &CancellationToken::new()),
    )
    .await;
    assert!(dropped.is_err());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !planned.exists(),
        "the plan ran on after nobody waited for it"
    );
}

/// A stand-in whose `show` writes `json` (a shell `printf` format) without end,
/// deaf to SIGPIPE, and touches `finished` if it ever stops on its own.
fn endless_show(dir: &Path, json: &str, finished: &Path) -> PathBuf {
    tool(
        dir,
        &format!(
            r#"case "$1" in
  plan) touch "${{6#-out=}}"; exit 2;;
  show) trap '' PIPE; printf '['; while :; do printf '{json}' || :; done; touch '{}';;
esac"#,
            finished.display()
        ),
    )
}

/// What planning with `script` as terraform under `limits` fails with.
async fn plan_error_under(dir: &Path, script: &Path, limits: PlanLimits) -> ExecError {
    let exec = ProcessExecutor::new(dir.join("cache"))
        .with_binary(Tool::Terraform, script.display().to_string())
        .with_plan_limits(limits);
    let job = job(dir, Duration::from_secs(120));
    exec.plan(&job, &CancellationToken::new())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_plan_json_past_the_cap_fails_the_unit_and_its_show_is_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let finished = tmp.path().join("finished");
    let script = endless_show(
        tmp.path(),
        r#"\"0123456789abcdef0123456789abcdef\","#,
        &finished,
    );
    let limits = PlanLimits {
        max_json_mib: 1,
        memory_mib: 64,
    };
    let err = plan_error_under(tmp.path(), &script, limits).await;
    assert!(
        matches!(err, ExecError::PlanTooLarge { limit_mib: 1 }),
        "{err}"
    );
    assert!(err.to_string().contains("larger than 1 MiB"), "{err}");
    assert!(!finished.exists());
}

#[tokio::test]
async fn a_plan_json_that_would_parse_past_the_memory_budget_fails_the_unit() {
    let tmp = tempfile::tempdir().unwrap();
    let finished = tmp.path().join("finished");
    // Two bytes a value: the densest JSON, the costliest to parse.
    let script = endless_show(tmp.path(), "0,0,0,0,0,0,0,0,", &finished);
    let limits = PlanLimits {
        max_json_mib: 16,
        memory_mib: 48,
    };
    let err = plan_error_under(tmp.path(), &script, limits).await;
    assert!(
        matches!(err, ExecError::PlanOverBudget { budget_mib: 48, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("--plan-memory"), "{err}");
    assert!(!finished.exists());
}
