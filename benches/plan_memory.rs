//! Peak resident memory of a real `cascade serve` planning a pull request whose
//! unit holds a 128 MiB string built from 16 bytes in `locals` (as a
//! `terraform_data` input, so it is in the plan JSON more than once), side by
//! side: with the defaults (`--max-plan-json 64`, `--plan-memory 1024`) and
//! with the old cap (`--max-plan-json 512`, and a budget large enough for it).
//! A third server, capped at 1 MiB, gives the floor: what the same pull request costs
//! the server besides its plan JSON. The figure is the server's VmHWM after the plan minus its VmHWM before the
//! webhook; terraform's own memory is its own process's and not counted.
//!
//! `cargo bench --bench plan_memory` (needs terraform on PATH; a few minutes).

// The tests' helpers, of which a bench uses a part.
#[allow(dead_code, unused_imports)]
#[path = "../tests/support/mod.rs"]
mod support;
use support::fake_github;

#[path = "support/served.rs"]
mod served;

use fake_github::FakeGitHub;
use served::{Served, copy_example, pull_request_on};
use std::time::{Duration, Instant};

/// 1024 × 1024 × 8 copies of 16 bytes: terraform's `range` makes at most 1024 values.
const BIG: &str = r#"
locals {
  big = join("", [for i in range(1024) : join("", [for j in range(1024) : join("", [for k in range(8) : "0123456789abcdef"])])])
}

resource "terraform_data" "big" {
  input = local.big
}
"#;

/// What one server did with the pull request: its peak growth in MiB, and how
/// the check run ended.
struct Measured {
    idle_mib: f64,
    peak_growth_mib: f64,
    conclusion: String,
    seconds: f64,
}

async fn measure(extra: &[&str]) -> Measured {
    let fake = FakeGitHub::start().await;
    fake.add_installation(77, "acme");
    let work = tempfile::tempdir().unwrap();
    copy_example(work.path());
    let unit = work.path().join("global/dns/main.tf");
    let text = std::fs::read_to_string(&unit).unwrap();
    std::fs::write(&unit, text + BIG).unwrap();
    let (n, head) = pull_request_on(&fake, work.path(), "global/dns/main.tf");
    let data = tempfile::tempdir().unwrap();
    let served = Served::start(&fake, data.path(), extra);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (idle, before) = served.memory();
    let started = Instant::now();
    fake.pull_request_event("acme/infra", n, "opened")
        .post(&served.url("/webhooks/github"))
        .await;
    let conclusion = loop {
        let done = fake
            .check_runs("acme/infra", &head)
            .iter()
            .find(|c| c.current().status == "completed")
            .map(|c| c.current().conclusion.clone().unwrap_or_default());
        if let Some(conclusion) = done {
            break conclusion;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1800),
            "no plan within 30 minutes"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let seconds = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (_, after) = served.memory();
    Measured {
        idle_mib: idle,
        peak_growth_mib: after - before,
        conclusion,
        seconds,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "`cascade serve` planning a pull request whose unit holds a 128 MiB string (peak RSS growth, VmHWM after - before):"
        );
        let bounded = measure(&[]).await;
        let old = measure(&["--max-plan-json", "512", "--plan-memory", "8192"]).await;
        // What the same pull request costs the server besides its plan JSON.
        let floor = measure(&["--max-plan-json", "1", "--plan-memory", "3"]).await;
        for (label, m) in [
            ("defaults (--max-plan-json 64)", &bounded),
            ("--max-plan-json 512", &old),
            ("floor (--max-plan-json 1)", &floor),
        ] {
            println!(
                "  {label:<32} idle {:.1} MiB, peak +{:.1} MiB, check run {} after {:.0} s",
                m.idle_mib, m.peak_growth_mib, m.conclusion, m.seconds
            );
        }
        println!(
            "  ratio (defaults / old cap): {:.3}",
            bounded.peak_growth_mib / old.peak_growth_mib.max(0.1)
        );
        assert!(
            bounded.peak_growth_mib < 128.0,
            "the defaults let the server grow by {:.1} MiB",
            bounded.peak_growth_mib
        );
    });
}
