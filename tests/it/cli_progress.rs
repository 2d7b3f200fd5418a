//! A run's progress when stderr is not a terminal (a CI log): a line when each unit starts
//! and one when it ends, with how long it took, on stderr only; stdout stays the report
//! alone. A unit named with an escape sequence shows it inert.

use crate::support;

use support::hostile::resource;
use support::{cascade_in as cascade, git, write_file};

const CONFIG: &str = "environments:\n  live:\n    path: live\n    executor: terraform\n";

/// The stderr line about `unit` that starts `[n/total] unit: ` and goes on with `rest`.
fn line_of<'a>(stderr: &'a str, total: usize, unit: &str, rest: &str) -> Option<&'a str> {
    stderr.lines().find(|line| {
        line.split_once("] ").is_some_and(|(number, tail)| {
            number.starts_with('[')
                && number.ends_with(&format!("/{total}"))
                && tail.starts_with(&format!("{unit}: {rest}"))
        })
    })
}

/// `planned in 4.2s`: a number of seconds with one decimal.
fn timed(line: &str, done: &str) -> bool {
    line.rsplit_once(&format!(": {done} in "))
        .and_then(|(_, took)| took.strip_suffix('s'))
        .is_some_and(|secs| secs.parse::<f64>().is_ok() && secs.contains('.'))
}

#[test]
fn without_a_terminal_each_unit_gets_a_start_and_a_timed_end_line_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    let evil = "live/e\u{1b}[2J\nfake";
    write_file(&dir, ".cascade.yaml", CONFIG);
    for unit in ["live/app", evil] {
        write_file(&dir, &format!("{unit}/terragrunt.hcl"), "");
        write_file(&dir, &format!("{unit}/main.tf"), &resource("x"));
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    let evil_main = format!("{evil}/main.tf");
    let (code, stdout, stderr) = cascade(
        &dir,
        &[
            "plan",
            "--format",
            "json",
            "--changed",
            "live/app/main.tf",
            &evil_main,
        ],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    // stdout is the JSON document and nothing else.
    let plan: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(plan["units"].as_array().unwrap().len(), 2, "{stdout}");
    let shown = "live/e␛[2J␊fake";
    for unit in ["live/app", shown] {
        assert!(
            line_of(&stderr, 2, unit, "planning…").is_some(),
            "{unit}: {stderr}"
        );
        let done = line_of(&stderr, 2, unit, "planned in ").unwrap_or_else(|| panic!("{stderr}"));
        assert!(timed(done, "planned"), "{done}");
    }
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(!stderr.contains("\nfake"), "{stderr:?}");

    // `cascade drift` walks the same way.
    let (code, stdout, stderr) = cascade(&dir, &["drift", "--units", "live/app"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let done = line_of(&stderr, 1, "live/app", "planned in ").unwrap_or_else(|| panic!("{stderr}"));
    assert!(timed(done, "planned"), "{done}");
    assert!(!stdout.contains("planned in"), "{stdout}");
}

#[test]
fn logs_on_a_pipe_carry_no_colour_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("repo");
    write_file(&dir, ".cascade.yaml", CONFIG);
    write_file(&dir, "live/app/terragrunt.hcl", "");
    write_file(&dir, "live/app/main.tf", &resource("x"));
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cascade"))
        .args(["plan", "--changed", "live/app/main.tf"])
        .current_dir(&dir)
        .env("CASCADE_LOG", "debug")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(" DEBUG "), "logs were written: {stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
}
