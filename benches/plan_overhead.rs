//! cascade's own overhead on a real plan: the bundled example grown to ~30
//! units (dev copied into three more environments), every unit affected,
//! planned by `cascade plan` and by a shell loop running `terraform plan` unit
//! by unit in topological order (wave by wave) at the same parallelism.
//!
//! cascade plans twice per round, once in its Landlock sandbox and once with
//! `--sandbox off`, so the sandbox's cost is their ratio in one run; set
//! `CASCADE_BENCH_BASELINE` to another cascade binary (an earlier build) to time it
//! beside them with its own defaults.
//!
//! `cargo bench --bench plan_overhead` (needs terraform on PATH).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const PARALLELISM: usize = 4;
const RUNS: usize = 5;

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("live");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/live"),
        &repo,
    );
    for env in ["qa", "stage", "perf", "sandbox"] {
        copy_dir(&repo.join("dev"), &repo.join(env));
        let env_hcl = repo.join(env).join("env.hcl");
        let text = std::fs::read_to_string(&env_hcl)
            .unwrap()
            .replace("\"dev\"", &format!("\"{env}\""));
        std::fs::write(env_hcl, text).unwrap();
    }
    // Every environment runs with terraform (the example's config lists dev and prod).
    std::fs::remove_file(repo.join(".cascade.yaml")).unwrap();
    std::fs::write(
        repo.join(".cascade.yaml"),
        "environments:\n".to_string()
            + &["dev", "prod", "global", "qa", "stage", "perf", "sandbox"]
                .iter()
                .map(|e| format!("  {e}:\n    path: {e}\n    executor: terraform\n"))
                .collect::<String>(),
    )
    .unwrap();
    let git = |args: &[&str]| {
        run(Command::new("git")
            .args([
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@example.com",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&repo))
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "bench"]);

    let cascade = env!("CARGO_BIN_EXE_cascade");
    let graph = Command::new(cascade)
        .args(["graph", "--format", "json"])
        .current_dir(&repo)
        .output()
        .unwrap();
    let graph: serde_json::Value = serde_json::from_slice(&graph.stdout).unwrap();
    let waves: Vec<Vec<String>> = graph["waves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            w.as_array()
                .unwrap()
                .iter()
                .map(|u| u.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    let units: usize = waves.iter().map(Vec::len).sum();
    // Both sides plan initialised units: init once, up front.
    for unit in waves.iter().flatten() {
        run(Command::new("terraform")
            .args(["init", "-input=false", "-no-color"])
            .current_dir(repo.join(unit))
            .env("CHECKPOINT_DISABLE", "1"));
    }

    let shell = |show: bool| {
        let started = Instant::now();
        for wave in &waves {
            let step = if show {
                "terraform plan -input=false -no-color -out=tfplan >/dev/null && terraform show -json tfplan >/dev/null"
            } else {
                "terraform plan -input=false -no-color -out=tfplan >/dev/null"
            };
            let script = format!(
                "printf '%s\\n' {} | xargs -P {PARALLELISM} -I{{}} sh -c 'cd {{}} && {step}'",
                wave.join(" ")
            );
            run(Command::new("sh")
                .args(["-c", &script])
                .current_dir(&repo)
                .env("CHECKPOINT_DISABLE", "1")
                .env("TF_IN_AUTOMATION", "1"));
        }
        started.elapsed()
    };
    let baseline = std::env::var("CASCADE_BENCH_BASELINE").ok();
    let cascade_plan = |binary: &str, sandbox: Option<&str>| {
        let started = Instant::now();
        run(Command::new(binary)
            .args([
                "plan",
                "--changed",
                "root.hcl",
                "--format",
                "json",
                "--parallelism",
                &PARALLELISM.to_string(),
            ])
            .args(
                sandbox
                    .map(|mode| ["--sandbox", mode])
                    .into_iter()
                    .flatten(),
            )
            .current_dir(&repo)
            .env("CHECKPOINT_DISABLE", "1"));
        started.elapsed()
    };
    // Warm up each (page cache, terraform's first start, cascade's own `init`).
    shell(false);
    cascade_plan(cascade, Some("landlock"));
    cascade_plan(cascade, Some("off"));
    if let Some(old) = &baseline {
        cascade_plan(old, None);
    }
    let mut loop_plan = Vec::new();
    let mut loop_plan_show = Vec::new();
    let mut ours = Vec::new();
    let mut unboxed = Vec::new();
    let mut before = Vec::new();
    for _ in 0..RUNS {
        loop_plan.push(shell(false));
        loop_plan_show.push(shell(true));
        ours.push(cascade_plan(cascade, Some("landlock")));
        unboxed.push(cascade_plan(cascade, Some("off")));
        if let Some(old) = &baseline {
            before.push(cascade_plan(old, None));
        }
    }
    let (lp, lps, c) = (median(loop_plan), median(loop_plan_show), median(ours));
    let off = median(unboxed);
    println!(
        "\nplan overhead on the example grown to {units} units in {} waves (parallelism {PARALLELISM}, median of {RUNS})",
        waves.len()
    );
    println!(
        "  shell loop, terraform plan per unit, wave by wave      {:>8.0} ms",
        lp.as_secs_f64() * 1e3
    );
    println!(
        "  shell loop, plan + show -json per unit, wave by wave   {:>8.0} ms",
        lps.as_secs_f64() * 1e3
    );
    println!(
        "  cascade plan (plan + show -json + fingerprints + store) {:>7.0} ms",
        c.as_secs_f64() * 1e3
    );
    println!(
        "  cascade plan --sandbox off                             {:>8.0} ms",
        off.as_secs_f64() * 1e3
    );
    if !before.is_empty() {
        println!(
            "  baseline binary (CASCADE_BENCH_BASELINE)               {:>8.0} ms",
            median(before.clone()).as_secs_f64() * 1e3
        );
    }
    println!(
        "  ratio cascade / shell loop (plan only)                 {:>8.2}",
        c.as_secs_f64() / lp.as_secs_f64()
    );
    println!(
        "  ratio cascade / shell loop (plan + show)               {:>8.2}",
        c.as_secs_f64() / lps.as_secs_f64()
    );
    println!(
        "  ratio sandbox / --sandbox off                          {:>8.3}",
        c.as_secs_f64() / off.as_secs_f64()
    );
    if !before.is_empty() {
        println!(
            "  ratio cascade / baseline binary                        {:>8.3}",
            c.as_secs_f64() / median(before).as_secs_f64()
        );
    }
}
