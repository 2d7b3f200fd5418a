//! What a workflow's `run` step costs beyond the program it runs: `true` run N times
//! through `ProcessExecutor::run_step` (its own process group through the wrapper,
//! output to a file then redacted into the unit's log, the `CASCADE_*` environment) in the
//! Landlock sandbox and with the sandbox off, beside the same `true` spawned N times by
//! `std::process::Command` (the baseline), side by side in one run. Prints ms per step and
//! the ratios.
//!
//! `cargo bench --bench step_overhead`.

use cascade::config::workflows::{Format, Hook, RunStep, Stdin, VisibleOn, When};
use cascade::exec::sandbox::{Sandbox, SandboxMode, SandboxState, SandboxUser};
use cascade::exec::{Executor, Phase, ProcessExecutor, StepCall, StepVars, UnitJob};
use cascade::unit::{Tool, UnitPath};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const STEPS: usize = 50;
const ROUNDS: usize = 5;

fn job(root: &Path) -> UnitJob {
    let run = root.join("data/runs/r1");
    UnitJob {
        unit: UnitPath::new("live/app"),
        dir: root.join("checkout/live/app"),
        root: root.join("checkout"),
        repo: "acme/infra".into(),
        sources: vec![],
        tool: Tool::Terraform,
        plan_file: run.join("plans/live--app.tfplan"),
        log: run.join("001_live--app.log"),
        work: run.join("work/live--app"),
        destroy: false,
        init_args: vec![],
        timeout: Duration::from_secs(60),
        init_timeout: Duration::from_secs(60),
        phase: Phase::Plan,
        workflow: None,
        plan_targets: Vec::new(),
        state_change: None,
    }
}

fn executor(root: &Path, sandbox: Sandbox) -> ProcessExecutor {
    let parent = [("PATH", std::env::var("PATH").unwrap())];
    ProcessExecutor::new(root.join("data/exec"))
        .with_environment(parent.map(|(k, v)| (k.into(), v.into())), &[])
        .with_sandbox(sandbox)
}

async fn through_cascade(exec: &ProcessExecutor, job: &UnitJob) -> Duration {
    let step = RunStep {
        name: "true".into(),
        command: vec!["true".into()],
        when: When::Success,
        visible_on: VisibleOn::Failure,
        format: Format::Code,
        timeout: Duration::from_secs(60),
        ignore_errors: false,
        stdin: Stdin::None,
    };
    let vars = StepVars {
        repo: "acme/infra".into(),
        pr: Some(7),
        head_sha: "1".repeat(40),
        base_sha: "2".repeat(40),
        plan_id: None,
        results_file: None,
    };
    let started = Instant::now();
    for _ in 0..STEPS {
        let call = StepCall {
            step: &step,
            hook: Hook::PrePlan,
            vars: &vars,
            stdin: None,
        };
        let out = exec
            .run_step(job, call, &CancellationToken::new())
            .await
            .expect("the step runs");
        assert_eq!(out.code, 0);
    }
    started.elapsed()
}

fn spawned(dir: &Path) -> Duration {
    let started = Instant::now();
    for _ in 0..STEPS {
        let status = std::process::Command::new("true")
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success());
    }
    started.elapsed()
}

fn per_step(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0 / STEPS as f64
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("checkout/live/app")).unwrap();
    let job = job(root);
    let confined = Sandbox::new(SandboxMode::Landlock, SandboxUser::Server, None)
        .expect("this machine has Landlock");
    assert!(matches!(confined.state(), SandboxState::Enforced { .. }));
    let open = Sandbox::new(SandboxMode::Off, SandboxUser::Server, None).unwrap();
    let (sandboxed, unconfined) = (executor(root, confined), executor(root, open));
    let (mut base, mut off, mut on) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        base.push(spawned(&job.dir));
        off.push(through_cascade(&unconfined, &job).await);
        on.push(through_cascade(&sandboxed, &job).await);
    }
    let (base, off, on) = (median(base), median(off), median(on));
    println!("{STEPS} `true` steps, median of {ROUNDS} rounds:");
    println!(
        "  spawned directly (baseline)   {:7.2} ms/step",
        per_step(base)
    );
    println!(
        "  run_step, sandbox off         {:7.2} ms/step  ({:.1}x baseline)",
        per_step(off),
        off.as_secs_f64() / base.as_secs_f64()
    );
    println!(
        "  run_step, Landlock sandbox    {:7.2} ms/step  ({:.1}x baseline, {:.2}x sandbox off)",
        per_step(on),
        on.as_secs_f64() / base.as_secs_f64(),
        on.as_secs_f64() / off.as_secs_f64()
    );
    println!(
        "  cascade's overhead per step   {:7.2} ms (sandboxed minus baseline)",
        per_step(on) - per_step(base)
    );
}
