//! Replicas on one PostgreSQL database (a throwaway cluster, as the tests
//! start; needs `initdb`), with the fake GitHub:
//! - plans per minute with 1 and with 3 in-process replicas (`--parallelism 1`
//!   each), pull requests each changing one unit of their own, their
//!   deliveries spread round-robin; the ratio shows whether the replicas share
//!   the work or serialise on the database (target >= 2.5x); a scripted
//!   `terraform` (no real one: a fixed sleep and a canned one-resource plan) makes
//!   every unit take the same time and no CPU, so the figure is cascade's;
//! - takeover: two replica processes with the default lease (15 s), a slow
//!   plan (the real terraform behind a sleeping stand-in) on the first, SIGKILL, and the time until the second starts planning
//!   that pull request (target < 30 s).
//!
//! `cargo bench --bench replicas` (both); `cargo bench --bench replicas -- takeover`
//! runs one.

// The tests' helpers, of which a bench uses a part.
#[allow(dead_code, unused_imports)]
#[path = "../tests/support/mod.rs"]
mod support;
use support::{bot_world, postgres, replicas, wait};

use bot_world::{REPO, World, git_out, push, world_unserved};
use replicas::{Terraform, in_process, post, processes, pull_request};
use std::ffi::OsStr;
use std::time::{Duration, Instant};

/// Pull requests per run, each its own unit.
const PULL_REQUESTS: usize = 12;
/// How long each unit's plan takes (the stand-in's sleep).
const UNIT_SECONDS: f64 = 2.0;
/// `cascade serve`'s default `--replica-lease`.
const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// `count` units `dev/bench-<i>` with nothing to read, committed on `main` and pushed:
/// pull requests on them neither share a unit nor a lock.
fn add_units(w: &mut World, count: usize) {
    let dir = w.work.path();
    git_out(dir, &["checkout", "-q", "main"]);
    for i in 0..count {
        let unit = dir.join(format!("dev/bench-{i}"));
        std::fs::create_dir_all(&unit).unwrap();
        std::fs::write(
            unit.join("terragrunt.hcl"),
            "include \"root\" {\n  path = find_in_parent_folders(\"root.hcl\")\n}\n",
        )
        .unwrap();
        std::fs::write(
            unit.join("main.tf"),
            format!(
                "terraform {{\n  backend \"local\" {{}}\n}}\n\nresource \"terraform_data\" \"unit\" {{\n  input = \"bench-{i}\"\n}}\n"
            ),
        )
        .unwrap();
    }
    git_out(dir, &["add", "-A"]);
    git_out(dir, &["commit", "-qm", "bench units"]);
    w.base_sha = push(w, "main");
}

/// Plans per minute of `replicas` in-process replicas on `PULL_REQUESTS` pull requests.
async fn plan_rate(replicas: usize) -> f64 {
    let terraform = Terraform::scripted();
    terraform.set_sleep("plan", UNIT_SECONDS);
    let database = postgres::database().await;
    let mut w = world_unserved("").await;
    add_units(&mut w, PULL_REQUESTS);
    let bin = terraform.bin().to_string_lossy().into_owned();
    let r = in_process(&w, &database, replicas, |c| {
        c.terraform_bin = bin.clone();
        c.parallelism = 1;
    })
    .await;
    let prs: Vec<(u64, String)> = (0..PULL_REQUESTS)
        .map(|i| {
            let file = format!("dev/bench-{i}/main.tf");
            pull_request(&w, &format!("bench-{i}"), &file, &[&file])
        })
        .collect();
    let started = Instant::now();
    for (i, (n, _)) in prs.iter().enumerate() {
        let delivery = w.fake.pull_request_event(REPO, *n, "opened");
        assert_eq!(post(&delivery, &r.hook(i % replicas)).await, 202);
    }
    wait::until(
        "every plan",
        Duration::from_secs(900),
        r.jobs(),
        || prs.iter().all(|(_, head)| w.checks_done(head)),
        String::new,
    )
    .await;
    let elapsed = started.elapsed();
    for (n, _) in &prs {
        assert_eq!(w.bot_texts(*n).len(), 1, "one plan comment on #{n}");
    }
    let units = terraform
        .calls()
        .iter()
        .filter(|c| c.verb == "plan")
        .count();
    assert_eq!(units, PULL_REQUESTS, "each unit planned once");
    r.shutdown().await;
    let rate = PULL_REQUESTS as f64 / elapsed.as_secs_f64() * 60.0;
    println!(
        "  {replicas} replica(s): {PULL_REQUESTS} plans in {:.1} s = {rate:.1} plans/min",
        elapsed.as_secs_f64()
    );
    rate
}

async fn plans_per_minute() {
    println!(
        "plans per minute on one PostgreSQL, {PULL_REQUESTS} pull requests of one unit each \
         ({UNIT_SECONDS} s scripted plan), --parallelism 1 per \
         replica, deliveries round-robin:"
    );
    let one = plan_rate(1).await;
    let three = plan_rate(3).await;
    println!(
        "  3 replicas / 1 replica: {:.2}x (target >= 2.5x)",
        three / one
    );
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

async fn takeover() {
    let terraform = Terraform::new();
    terraform.set_sleep("plan", UNIT_SECONDS);
    let database = postgres::database().await;
    let w = world_unserved("").await;
    let bin = terraform.bin();
    let mut r = processes(
        &w,
        &database,
        2,
        DEFAULT_LEASE,
        &[OsStr::new("--terraform-bin"), bin.as_os_str()],
    )
    .await;
    // Every unit: a plan long enough to be killed in.
    let (n, _) = pull_request(&w, "wide", "root.hcl", &["root.hcl"]);
    let opened = w.fake.pull_request_event(REPO, n, "opened");
    assert_eq!(post(&opened, &r[0].hook()).await, 202);
    wait::until(
        "replica A planning",
        Duration::from_secs(300),
        Vec::new(),
        || terraform.calls_of("plan", n).len() >= 2,
        || r[0].log(),
    )
    .await;
    r[0].kill();
    let killed = now_ms();
    let survivor = r[1].data();
    let resumed = || {
        terraform
            .calls_of("plan", n)
            .into_iter()
            .find(|c| c.by(&survivor))
    };
    wait::until(
        "replica B planning",
        Duration::from_secs(300),
        Vec::new(),
        || resumed().is_some(),
        || r[1].log(),
    )
    .await;
    let took = resumed().unwrap().at_ms - killed;
    println!(
        "takeover with the default lease ({} s): SIGKILL of the replica planning to the first \
         unit planned by the other: {:.1} s (target < 30 s)",
        DEFAULT_LEASE.as_secs(),
        took as f64 / 1e3
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `cargo bench --bench replicas -- NAME…` runs only the named parts.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    runtime.block_on(async {
        if wanted("plans_per_minute") {
            plans_per_minute().await;
        }
        if wanted("takeover") {
            takeover().await;
        }
    });
}
