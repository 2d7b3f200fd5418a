//! A workflow's `run` steps in the process executor, with the real Linux Landlock and a
//! data directory laid out like the server's: the plan JSON reaches a step through a
//! pipe and no file, a step is confined like terraform (cascade's secrets refused, the
//! saved plan only readable), gets exactly its `CASCADE_*` facts, is stopped with its
//! whole process group at its timeout, hands back the redacted end of its output; and
//! the operator's named credentials (`from_server:`) reach a unit's commands only when
//! its workflow selects them and the operator's globs cover it.

use crate::exec_process::{alive, until};
use crate::sandbox::Server;
use cascade::config::workflows::{
    EnvValue, EnvVar, Format, Hook, RunStep, Stdin, VisibleOn, When, Workflow,
};
use cascade::exec::{
    ExecError, Executor, MAX_STEP_OUTPUT, ProcessExecutor, StepCall, StepOutput, StepVars, UnitEnv,
    UnitJob,
};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A step running `command`, within 60 s.
fn step(command: &[&str]) -> RunStep {
    RunStep {
        name: command[0].to_string(),
        command: command.iter().map(|s| s.to_string()).collect(),
        when: When::Success,
        visible_on: VisibleOn::Failure,
        format: Format::Code,
        timeout: Duration::from_secs(60),
        ignore_errors: false,
        stdin: Stdin::None,
    }
}

/// A `sh -c SCRIPT` step.
fn script(body: &str) -> RunStep {
    RunStep {
        name: "check".into(),
        ..step(&["sh", "-c", body])
    }
}

fn facts() -> StepVars {
    StepVars {
        repo: "acme/infra".into(),
        pr: Some(7),
        head_sha: "1111111111111111111111111111111111111111".into(),
        base_sha: "2222222222222222222222222222222222222222".into(),
        plan_id: None,
        results_file: None,
    }
}

/// Runs `step` in `hook` for `job`, with `facts` and `stdin`.
async fn run(
    exec: &ProcessExecutor,
    job: &UnitJob,
    hook: Hook,
    step: &RunStep,
    facts: &StepVars,
    stdin: Option<&[u8]>,
) -> Result<StepOutput, ExecError> {
    let call = StepCall {
        step,
        hook,
        vars: facts,
        stdin,
    };
    exec.run_step(job, call, &CancellationToken::new()).await
}

/// [`run`] in `post_plan` without standard input, which must exit 0.
async fn ok(exec: &ProcessExecutor, job: &UnitJob, step: &RunStep) -> String {
    let out = run(exec, job, Hook::PostPlan, step, &facts(), None)
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", log(job)));
    assert_eq!(out.code, 0, "{}", out.output);
    out.output
}

fn log(job: &UnitJob) -> String {
    std::fs::read_to_string(&job.log).unwrap_or_default()
}

/// Every file under `dirs` that holds `needle`.
fn files_holding(dirs: &[&Path], needle: &[u8]) -> Vec<String> {
    dirs.iter()
        .flat_map(|dir| walkdir::WalkDir::new(dir).into_iter().map(Result::unwrap))
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            std::fs::read(e.path()).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
        })
        .map(|e| e.path().display().to_string())
        .collect()
}

#[tokio::test]
async fn the_plan_json_reaches_a_step_through_a_pipe_and_no_file() {
    let s = Server::new();
    let exec = s.executor();
    let job = s.job("live/app");
    let marker = "PLAN-JSON-MARKER-5ca1ab1e";
    // Larger than a pipe holds: the step must be read from as it is written to.
    let padding = "x".repeat(300 << 10);
    let json = format!(r#"{{"format_version":"1.2","marker":"{marker}","padding":"{padding}"}}"#);
    let digest = hex::encode(Sha256::digest(json.as_bytes()));
    let hashing = script("sha256sum | cut -d' ' -f1");
    let out = run(
        &exec,
        &job,
        Hook::PostPlan,
        &hashing,
        &facts(),
        Some(json.as_bytes()),
    )
    .await
    .unwrap();
    assert_eq!(
        (out.code, out.output.as_str()),
        (0, &*format!("{digest}\n"))
    );
    assert!(!out.truncated);
    assert!(log(&job).contains("$ [post_plan] sh -c sha256sum | cut -d' ' -f1"));
    assert_eq!(
        files_holding(&[&s.data(), &job.dir], marker.as_bytes()),
        Vec::<String>::new()
    );

    // A step that reads none of it, or stops reading early, holds nothing up.
    for body in ["true", "head -c 10 >/dev/null; sleep 0.2", "sleep 0.2"] {
        let out = run(
            &exec,
            &job,
            Hook::PostPlan,
            &script(body),
            &facts(),
            Some(json.as_bytes()),
        )
        .await
        .unwrap();
        assert_eq!(out.code, 0, "{body}");
    }
    // Without a plan JSON, standard input is empty.
    assert_eq!(ok(&exec, &job, &script("wc -c")).await.trim(), "0");
}

#[tokio::test]
async fn a_step_is_confined_like_terraform() {
    let s = Server::new();
    let exec = s.executor();
    let job = s.job("live/app");
    std::fs::create_dir_all(job.plan_file.parent().unwrap()).unwrap();
    std::fs::write(&job.plan_file, "SAVED-PLAN-BYTES").unwrap();
    let key = s.key().display().to_string();
    let database = s.data().join("cascade.db").display().to_string();
    for (path, class, secret) in [
        (&key, "the GitHub App's private key", "APP-KEY-d00d"),
        (&database, "cascade's database", "SQLITE-ROWS-c0ffee"),
    ] {
        let err = run(
            &exec,
            &job,
            Hook::PrePlan,
            &step(&["cat", path]),
            &facts(),
            None,
        )
        .await
        .expect_err(path);
        // `cat` names no system call: "reaching".
        let ExecError::SandboxRefused { what, .. } = &err else {
            panic!("{path}: not a sandbox refusal: {err}");
        };
        assert_eq!(what, class);
        assert!(
            !err.to_string().contains(&*s.data().to_string_lossy()),
            "{err}"
        );
        assert!(!log(&job).contains(secret), "{}", log(&job));
    }

    // The saved plan is readable, never writable; the unit's directory is writable.
    let read = ok(&exec, &job, &script("cat \"$CASCADE_PLANFILE\"")).await;
    assert_eq!(read, "SAVED-PLAN-BYTES\n");
    let err = run(
        &exec,
        &job,
        Hook::PostPlan,
        &script("echo changed > \"$CASCADE_PLANFILE\""),
        &facts(),
        None,
    )
    .await;
    assert!(
        matches!(
            err,
            Err(ExecError::SandboxRefused {
                verb: "writing",
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&job.plan_file).unwrap(),
        "SAVED-PLAN-BYTES"
    );
    ok(&exec, &job, &script("echo report > report.txt")).await;
    assert!(job.dir.join("report.txt").exists());

    // The results file is a post step's to read, and no pre step's.
    let results = job.log.parent().unwrap().join("results.json");
    std::fs::write(&results, r#"{"units":[]}"#).unwrap();
    let with_results = StepVars {
        results_file: Some(results.clone()),
        ..facts()
    };
    let reading = step(&["cat", &results.display().to_string()]);
    let out = run(&exec, &job, Hook::PostApply, &reading, &with_results, None)
        .await
        .unwrap();
    assert_eq!(out.output, r#"{"units":[]}"#.to_string() + "\n");
    let err = run(&exec, &job, Hook::PreApply, &reading, &with_results, None).await;
    assert!(
        matches!(err, Err(ExecError::SandboxRefused { .. })),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_step_gets_exactly_its_facts_and_the_allowed_environment() {
    let s = Server::new();
    let parent = [
        ("PATH", std::env::var("PATH").unwrap()),
        ("HOME", "/root".into()),
        ("LANG", "C.UTF-8".into()),
        ("AWS_REGION", "eu-west-1".into()),
        ("CASCADE_WEBHOOK_SECRET", "webhook-secret-0000".into()),
        ("CASCADE_DATABASE_URL", "postgres://cascade".into()),
        ("DATABASE_URL", "postgres://other".into()),
    ];
    let exec = ProcessExecutor::new(s.data().join("exec"))
        .with_environment(parent.map(|(k, v)| (k.into(), v.into())), &[])
        .with_sandbox(s.sandbox());
    let mut workflow = Workflow::with_name("lint");
    workflow.env = vec![EnvVar {
        name: "TFLINT_CONFIG_FILE".into(),
        value: EnvValue::Plain(".tflint.hcl".into()),
    }];
    let job = UnitJob {
        workflow: Some(Arc::new(workflow)),
        ..s.job("live/app")
    };
    let results = job.log.parent().unwrap().join("results.json");
    let facts = StepVars {
        plan_id: Some("p-3f2a".into()),
        results_file: Some(results),
        ..facts()
    };
    let env = |hook: Hook, facts: StepVars| {
        let (exec, job) = (&exec, &job);
        async move {
            let out = run(exec, job, hook, &step(&["env"]), &facts, None)
                .await
                .unwrap();
            let mut lines: Vec<String> = out.output.lines().map(str::to_string).collect();
            lines.sort();
            lines
        }
    };
    let cascade = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.starts_with("CASCADE_"))
            .cloned()
            .collect()
    };

    let post = env(Hook::PostApply, facts.clone()).await;
    assert_eq!(
        cascade(&post),
        [
            "CASCADE_BASE_SHA=2222222222222222222222222222222222222222",
            "CASCADE_HEAD_SHA=1111111111111111111111111111111111111111",
            "CASCADE_PHASE=post_apply",
            // The server's paths are shown as what the step knows them by.
            "CASCADE_PLANFILE=$CASCADE_PLANFILE",
            "CASCADE_PLAN_ID=p-3f2a",
            "CASCADE_PR=7",
            "CASCADE_REPO=acme/infra",
            "CASCADE_RESULTS_FILE=$CASCADE_RESULTS_FILE",
            "CASCADE_UNIT=live/app",
        ]
    );
    for expected in [
        "AWS_REGION=eu-west-1",
        "LANG=C.UTF-8",
        "TF_IN_AUTOMATION=1",
        "TFLINT_CONFIG_FILE=.tflint.hcl",
        "HOME=$TMPDIR",
        "TMPDIR=$TMPDIR",
    ] {
        assert!(post.iter().any(|l| l == expected), "{expected}: {post:#?}");
    }
    assert!(post.iter().any(|l| l.starts_with("PATH=")), "{post:#?}");
    assert!(!post.iter().any(|l| l.starts_with("DATABASE_URL")));

    // A pre step gets no results file, and drift (no pull request) no number.
    let pre = env(
        Hook::PrePlan,
        StepVars {
            pr: None,
            plan_id: None,
            ..facts
        },
    )
    .await;
    assert_eq!(
        cascade(&pre)
            .iter()
            .map(|l| l.split('=').next().unwrap())
            .collect::<Vec<_>>(),
        [
            "CASCADE_BASE_SHA",
            "CASCADE_HEAD_SHA",
            "CASCADE_PHASE",
            "CASCADE_PLANFILE",
            "CASCADE_REPO",
            "CASCADE_UNIT"
        ]
    );
    assert!(!log(&job).contains("webhook-secret-0000"));
}

#[tokio::test]
async fn a_step_past_its_timeout_is_stopped_with_its_process_group() {
    let s = Server::new();
    let exec = s.executor().with_grace(Duration::from_millis(300));
    let job = s.job("live/app");
    let sleeping = RunStep {
        timeout: Duration::from_millis(500),
        ..script("sleep 60 & echo $! > bg.pid; echo $$ > fg.pid; wait")
    };
    let err = run(&exec, &job, Hook::PreApply, &sleeping, &facts(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ExecError::TimedOut { command, .. } if command == "check"),
        "{err}"
    );
    for file in ["bg.pid", "fg.pid"] {
        let pid: i32 = std::fs::read_to_string(job.dir.join(file))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        until(file, || !alive(pid)).await;
    }
}

#[tokio::test]
async fn a_step_hands_back_the_redacted_end_of_its_output_and_logs_it_all() {
    let s = Server::new();
    let exec = s.executor();
    let job = s.job("live/app");
    // About 1.2 MiB of lines.
    let out = run(
        &exec,
        &job,
        Hook::PostPlan,
        &step(&["seq", "1", "200000"]),
        &facts(),
        None,
    )
    .await
    .unwrap();
    assert!(out.truncated);
    assert_eq!(out.output.len(), MAX_STEP_OUTPUT);
    assert!(
        out.output.ends_with("\n199999\n200000\n"),
        "{}",
        &out.output[..40]
    );
    let log = log(&job);
    assert!(log.contains("$ [post_plan] seq 1 200000\n1\n2\n3\n"));
    assert!(log.ends_with("\n200000\n"));

    cascade::redact::register_secret("step-secret-value-8f8f");
    let printing = script("echo \"token: step-secret-value-8f8f\"; echo done >&2; exit 3");
    let out = run(&exec, &job, Hook::PostPlan, &printing, &facts(), None)
        .await
        .unwrap();
    assert_eq!(out.code, 3);
    assert_eq!(out.output, "token: [redacted]\ndone\n");
    assert!(!out.truncated);
    let log = std::fs::read_to_string(&job.log).unwrap();
    assert!(log.contains("token: [redacted]") && !log.contains("step-secret-value-8f8f"));

    // No program of that name: refused by name, before anything runs.
    let err = run(
        &exec,
        &job,
        Hook::PostPlan,
        &step(&["tflint-not-installed", "--format", "compact"]),
        &facts(),
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot run `tflint-not-installed`: not found on the server's PATH; is it installed and on PATH?"
    );
    let err = run(
        &exec,
        &job,
        Hook::PostPlan,
        &step(&["./scripts/missing.sh"]),
        &facts(),
        None,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ExecError::Spawn { .. }), "{err}");
}

/// A unit whose plan keeps `var.role` (default `no-role`) in a resource.
fn unit_with_role(s: &Server) -> UnitJob {
    let job = s.job("live/app");
    std::fs::write(
        job.dir.join("main.tf"),
        "terraform {\n  backend \"local\" {}\n}\n\nvariable \"role\" {\n  type    = string\n  default = \"no-role\"\n}\n\nresource \"terraform_data\" \"unit\" {\n  input = var.role\n}\n",
    )
    .unwrap();
    job
}

/// The operator's file: the unit's automatic entry, and named ones.
fn operator(tokens: &Path) -> Arc<UnitEnv> {
    std::fs::write(tokens.join("deployer-token"), "DEPLOYER-TOKEN-41c3").unwrap();
    let file = format!(
        r#"- units: live/**
  plan: {{AWS_PROFILE: automatic-profile}}
- name: prod-deployer
  repository: "acme/*"
  units: live/**
  plan: {{TF_VAR_role: selected-plan-role-1234, AWS_PROFILE: selected-profile, AWS_WEB_IDENTITY_TOKEN_FILE: {}/deployer-token}}
  apply: {{TF_VAR_role: selected-apply-role-5678}}
- name: dev-only
  units: dev/**
  env: {{TF_VAR_role: dev-role-9999}}
"#,
        tokens.display()
    );
    Arc::new(UnitEnv::parse(&file, Path::new("/")).unwrap())
}

fn selecting(entry: &str, names: &[&str]) -> Arc<Workflow> {
    let mut workflow = Workflow::with_name("deploy");
    workflow.env = names
        .iter()
        .map(|name| EnvVar {
            name: name.to_string(),
            value: EnvValue::FromServer(entry.into()),
        })
        .collect();
    Arc::new(workflow)
}

fn planned_role(json: &[u8]) -> String {
    let show: serde_json::Value = serde_json::from_slice(json).unwrap();
    show["variables"]["role"]["value"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn named_credentials_reach_a_unit_only_when_its_workflow_selects_them() {
    let s = Server::new();
    let tokens = s.tmp.path().join("tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let exec = s.executor().with_unit_env(operator(&tokens));
    let cancel = CancellationToken::new();
    let job = unit_with_role(&s);

    // Not selected: the named entry gives nothing, the automatic one its values.
    let json = exec.plan(&job, &cancel).await.unwrap();
    assert_eq!(planned_role(json.bytes()), "no-role");
    let profile = ok(&exec, &job, &script("echo \"$AWS_PROFILE\"")).await;
    assert_eq!(profile, "[redacted]\n");
    let err = run(
        &exec,
        &job,
        Hook::PostPlan,
        &step(&["cat", &tokens.join("deployer-token").display().to_string()]),
        &facts(),
        None,
    )
    .await;
    assert!(
        matches!(err, Err(ExecError::SandboxRefused { .. })),
        "{err:?}"
    );

    // Selected: terraform and the steps get it, over the automatic entry's, per phase.
    let job = UnitJob {
        workflow: Some(selecting(
            "prod-deployer",
            &["TF_VAR_role", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE"],
        )),
        ..job
    };
    let json = exec.plan(&job, &cancel).await.unwrap();
    assert_eq!(planned_role(json.bytes()), "selected-plan-role-1234");
    let shown = ok(
        &exec,
        &job,
        &script("echo \"$TF_VAR_role $AWS_PROFILE\"; cat \"$AWS_WEB_IDENTITY_TOKEN_FILE\""),
    )
    .await;
    assert_eq!(shown, "[redacted] [redacted]\nDEPLOYER-TOKEN-41c3\n");
    let apply_job = UnitJob {
        phase: cascade::exec::Phase::Apply,
        workflow: Some(selecting("prod-deployer", &["TF_VAR_role"])),
        ..job.clone()
    };
    let json = exec.plan(&apply_job, &cancel).await.unwrap();
    assert_eq!(planned_role(json.bytes()), "selected-apply-role-5678");
    let logged = log(&job);
    for value in [
        "selected-plan-role-1234",
        "selected-apply-role-5678",
        "automatic-profile",
    ] {
        assert!(!logged.contains(value), "{value} in the log");
    }

    // Refused before anything runs: an unknown name, a name whose globs leave the unit
    // out (told as an unknown one), a variable the entry does not give in this phase,
    // and a plain value over one the server gives.
    let nothing_ran = s.job("live/other");
    std::fs::create_dir_all(&nothing_ran.dir).unwrap();
    let mut plain = Workflow::with_name("deploy");
    plain.env = vec![EnvVar {
        name: "AWS_PROFILE".into(),
        value: EnvValue::Plain("mine".into()),
    }];
    for (workflow, reason) in [
        (
            selecting("nobody", &["TF_VAR_role"]),
            "the server has no credentials `nobody` for `live/other`; ask the operator to add an entry named `nobody` covering it to --unit-env-file",
        ),
        (
            selecting("dev-only", &["TF_VAR_role"]),
            "the server has no credentials `dev-only` for `live/other`; ask the operator to add an entry named `dev-only` covering it to --unit-env-file",
        ),
        (
            selecting("prod-deployer", &["AWS_SECRET_ACCESS_KEY"]),
            "the server's credentials `prod-deployer` give `live/other` no `AWS_SECRET_ACCESS_KEY` for a plan; ask the operator to add `AWS_SECRET_ACCESS_KEY` to the entry named `prod-deployer` in --unit-env-file",
        ),
        (
            Arc::new(plain),
            "the workflow `deploy` sets `AWS_PROFILE`, which the server gives this unit; a repository may select the server's values (`from_server:`) but not replace them, so remove it from the workflow's `env`",
        ),
    ] {
        let job = UnitJob {
            workflow: Some(workflow),
            ..nothing_ran.clone()
        };
        let err = exec.plan(&job, &cancel).await.unwrap_err();
        assert_eq!(err.to_string(), reason);
        let err = run(&exec, &job, Hook::PrePlan, &script("true"), &facts(), None)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), reason);
        assert!(!job.log.exists(), "nothing ran: {}", log(&job));
    }
}
