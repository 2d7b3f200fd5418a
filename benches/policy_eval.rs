//! What the embedded Rego engine costs: starting it (reading a policy set from disk and
//! compiling it), and evaluating the set for one unit whose plan changes 100 resources.
//!
//! ```text
//! cargo bench --bench policy_eval
//! ```
//!
//! The policy set is five files in conftest's style: three rules over the plan (no
//! destroy in `prod`, required tags on every created or updated resource, an allow-list
//! of instance types), a file of helpers they share, and a namespace of warnings. The
//! input is `{plan: <show -json>, unit: {path}, now}` with 100 `resource_changes` (a
//! tenth deletes, the rest creates and updates, some with a missing tag or a large
//! instance type). Rows are the median of the runs:
//!
//! - engine startup: `load_set` reading the five files from a directory on disk (the
//!   default branch's checkout, here a temporary one) and `Evaluator::new` on them;
//! - `Evaluator::new` alone (parse, refuse impure builtins, compile);
//! - the first `evaluate_blocking` of a freshly compiled set (cold: the compile is not
//!   timed), against `evaluate_blocking` on a set that has evaluated before (warm); each
//!   is one clone of the compiled engine, every rule of both packages, the findings;
//! - for comparison, compiling afresh for each unit instead of cloning;
//! - what the server and `cascade plan` pay: one evaluation in a child `cascade
//!   policy-worker` under its memory ceiling (start the process, send the set and the
//!   input, compile, evaluate, read the findings), through `PolicyWorker::evaluate`.

use cascade::policy::engine::{Evaluator, PolicyFile, load_set};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const RESOURCES: usize = 100;
const RUNS: usize = 21;

const FILES: [(&str, &str); 5] = [
    (
        "policies/lib.rego",
        r#"package main

import rego.v1

changes contains rc if {
    some rc in input.plan.resource_changes
    not rc.mode == "data"
}

is_destroy(rc) if "delete" in rc.change.actions

is_write(rc) if "create" in rc.change.actions

is_write(rc) if "update" in rc.change.actions

in_prod if startswith(input.unit.path, "prod/")
"#,
    ),
    (
        "policies/no_destroy_in_prod.rego",
        r#"package main

import rego.v1

deny contains msg if {
    in_prod
    some rc in changes
    is_destroy(rc)
    msg := sprintf("%s would be destroyed in prod", [rc.address])
}
"#,
    ),
    (
        "policies/required_tags.rego",
        r#"package main

import rego.v1

required_tags := {"owner", "cost-center", "environment"}

deny contains {"msg": msg, "resource": rc.address} if {
    some rc in changes
    is_write(rc)
    tags := object.get(rc.change.after, "tags", {})
    missing := required_tags - {k | some k, _ in tags}
    count(missing) > 0
    msg := sprintf("%s lacks the tags %v", [rc.address, sort(missing)])
}
"#,
    ),
    (
        "policies/instance_types.rego",
        r#"package main

import rego.v1

allowed_types := {"t3.micro", "t3.small", "t3.medium", "m6i.large"}

violation contains msg if {
    some rc in changes
    rc.type == "aws_instance"
    is_write(rc)
    not rc.change.after.instance_type in allowed_types
    msg := sprintf("%s uses %s, not one of %v", [rc.address, rc.change.after.instance_type, sort(allowed_types)])
}
"#,
    ),
    (
        "policies/warnings.rego",
        r#"package cascade.warnings

import rego.v1

warn contains msg if {
    n := count([rc | some rc in input.plan.resource_changes; "delete" in rc.change.actions])
    n > 5
    msg := sprintf("%d resources would be destroyed", [n])
}

warn contains msg if {
    t := time.parse_rfc3339_ns(input.now)
    time.weekday(t) == "Friday"
    msg := "a change on a Friday"
}
"#,
    ),
];

fn resource_change(i: usize) -> Value {
    let actions = match i % 10 {
        0 => json!(["delete"]),
        1..=4 => json!(["update"]),
        _ => json!(["create"]),
    };
    let mut tags = json!({"owner": "platform", "cost-center": "42", "environment": "prod"});
    if i.is_multiple_of(7) {
        tags.as_object_mut().unwrap().remove("cost-center");
    }
    let instance_type = if i.is_multiple_of(13) {
        "m5.24xlarge"
    } else {
        "t3.small"
    };
    let kind = if i.is_multiple_of(2) {
        "aws_instance"
    } else {
        "aws_s3_bucket"
    };
    json!({
        "address": format!("module.app[{}].{kind}.r{i}", i % 10),
        "module_address": format!("module.app[{}]", i % 10),
        "mode": "managed",
        "type": kind,
        "name": format!("r{i}"),
        "provider_name": "registry.terraform.io/hashicorp/aws",
        "change": {
            "actions": actions,
            "before": {"instance_type": "t3.micro", "tags": {"owner": "platform"}},
            "after": {"instance_type": instance_type, "tags": tags, "ami": "ami-0123456789"},
            "after_unknown": {"id": true, "arn": true},
            "before_sensitive": {},
            "after_sensitive": {"tags": {}}
        }
    })
}

fn input() -> Value {
    let changes: Vec<Value> = (0..RESOURCES).map(resource_change).collect();
    json!({
        "plan": {
            "format_version": "1.2",
            "terraform_version": "1.9.8",
            "resource_changes": changes,
            "configuration": {"root_module": {}}
        },
        "unit": {"path": "prod/app", "dependencies": ["prod/vpc"], "dependents": [], "wave": 2},
        "now": "2025-01-10T12:00:00Z"
    })
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1000.0
}

fn time<T>(mut f: impl FnMut() -> T) -> (f64, T) {
    let mut times = Vec::with_capacity(RUNS);
    let mut last = None;
    for _ in 0..RUNS {
        let start = Instant::now();
        last = Some(std::hint::black_box(f()));
        times.push(start.elapsed());
    }
    (median(times), last.unwrap())
}

/// The median time of `f`, each run on a fresh value from `setup`, which is not timed.
fn time_after<S, T>(mut setup: impl FnMut() -> S, mut f: impl FnMut(S) -> T) -> f64 {
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let value = setup();
        let start = Instant::now();
        std::hint::black_box(f(value));
        times.push(start.elapsed());
    }
    median(times)
}

fn main() {
    let files: Vec<PolicyFile> = FILES
        .iter()
        .map(|(path, text)| PolicyFile {
            path: path.to_string(),
            text: text.to_string(),
        })
        .collect();
    let namespaces = vec!["cascade.warnings".to_string()];
    let input = input();

    let tree = tempfile::tempdir().expect("a temporary directory");
    for file in &files {
        let path = tree.path().join(&file.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &file.text).unwrap();
    }
    let (startup_ms, _) = time(|| {
        let files = load_set(tree.path(), "policies").expect("the policies load");
        Evaluator::new("bench", &files, &namespaces).expect("the policies compile")
    });
    let (compile_ms, evaluator) =
        time(|| Evaluator::new("bench", &files, &namespaces).expect("the policies compile"));
    let cold_ms = time_after(
        || Evaluator::new("bench", &files, &namespaces).unwrap(),
        |fresh| fresh.evaluate_blocking(&input).expect("evaluates"),
    );
    // Warm: this set has evaluated once already, untimed.
    evaluator.evaluate_blocking(&input).expect("evaluates");
    let (eval_ms, findings) = time(|| evaluator.evaluate_blocking(&input).expect("evaluates"));
    let (fresh_ms, _) = time(|| {
        Evaluator::new("bench", &files, &namespaces)
            .unwrap()
            .evaluate_blocking(&input)
            .unwrap()
    });

    let worker =
        cascade::exec::policy_worker::PolicyWorker::new(env!("CARGO_BIN_EXE_cascade").into());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (child_ms, in_child) = time(|| {
        runtime
            .block_on(worker.evaluate(&evaluator, &input))
            .expect("evaluates in a child")
    });
    assert_eq!(in_child, findings, "the child finds what the process finds");

    println!(
        "policy set: {} files; input: {RESOURCES} resource changes, {} KiB of JSON",
        files.len(),
        serde_json::to_vec(&input).unwrap().len() / 1024
    );
    println!(
        "findings: {} deny, {} warn",
        findings.deny.len(),
        findings.warn.len()
    );
    println!("medians of {RUNS} runs:");
    println!("  engine startup: read from disk + compile  {startup_ms:>8.2} ms");
    println!("  compile the set                           {compile_ms:>8.2} ms");
    println!("  evaluate one unit, first after compile    {cold_ms:>8.2} ms");
    println!("  evaluate one unit, warm                   {eval_ms:>8.2} ms");
    println!("  compile + evaluate one unit               {fresh_ms:>8.2} ms");
    println!("  in a child policy-worker (what is paid)   {child_ms:>8.2} ms");
    println!(
        "  child / warm in process                   {:>8.2}x",
        child_ms / eval_ms
    );
}
