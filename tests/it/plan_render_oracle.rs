//! cascade's rendering of real plans against terraform's own: every line terraform prints
//! for the resource changes and output changes must appear, in order, in cascade's text,
//! and no sensitive value may.
//!
//! Each case under `tests/fixtures/render/` is a pair of configurations using only the
//! built-in `terraform_data` resource and `terraform_remote_state` data source: `before.tf`
//! is applied (with the local backend), then `after.tf` is planned. Optional files:
//! `taint` (addresses to taint after the apply) and `plan_args` (extra plan arguments, one
//! per line). The `terraform` on PATH makes every document at test time; the tests fail,
//! never skip, without it. The plan JSON is held in memory, as cascade does.
//!
//! Lines are compared with runs of white space collapsed (cascade aligns names like
//! terraform, but the oracle need not depend on it). The only differences allowed are the
//! deliberate ones:
//! - a sensitive value terraform prints anyway (it loses the mark in places, such as
//!   `terraform_data.output`) is `(sensitive value)` in cascade's text: every secret in the
//!   corpus contains `s3cr3t`, and a quoted string holding one is replaced in terraform's
//!   line before the comparison;
//! - cascade writes `# forces replacement` where terraform's dynamic values drop it.

use crate::support::terraform::terraform;
use cascade::plan::render::{RenderOptions, RenderedPlan};
use regex::Regex;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Every secret in the corpus contains this.
const SECRET_MARK: &str = "s3cr3t";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/render")
}

/// A planned case: terraform's human rendering and the plan JSON.
struct Planned {
    human: String,
    json: Vec<u8>,
}

fn plan_case(case: &str) -> Planned {
    let source = fixtures().join(case);
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    let copy = |name: &str| {
        std::fs::copy(source.join(name), work.join("main.tf")).unwrap();
    };
    copy("before.tf");
    terraform(work, &["init", "-input=false", "-no-color"]);
    terraform(
        work,
        &["apply", "-input=false", "-no-color", "-auto-approve"],
    );
    if let Ok(taint) = std::fs::read_to_string(source.join("taint")) {
        for address in taint.lines().filter(|l| !l.is_empty()) {
            terraform(work, &["taint", "-no-color", address]);
        }
    }
    copy("after.tf");
    let extra = std::fs::read_to_string(source.join("plan_args")).unwrap_or_default();
    let mut args = vec!["plan", "-input=false", "-no-color", "-out=p"];
    args.extend(extra.lines().filter(|l| !l.is_empty()));
    terraform(work, &args);
    Planned {
        human: String::from_utf8(terraform(work, &["show", "-no-color", "p"])).unwrap(),
        json: terraform(work, &["show", "-json", "p"]),
    }
}

fn unlimited() -> RenderOptions {
    RenderOptions {
        max_chars: usize::MAX,
        max_line_chars: usize::MAX,
    }
}

/// The lines terraform prints for resource changes and output changes.
fn terraform_lines(human: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut section = false;
    for line in human.lines() {
        if line.starts_with("Terraform will perform the following actions:")
            || line.starts_with("Changes to Outputs:")
        {
            section = true;
            continue;
        }
        if line.starts_with("Plan: ") || (section && line.starts_with("You can apply this plan")) {
            section = false;
            continue;
        }
        if section && !line.trim().is_empty() {
            lines.push(line.to_string());
        }
    }
    lines
}

fn normalise(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Terraform's line with what cascade masks masked.
fn masked(line: &str) -> String {
    static QUOTED_SECRET: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(r#""(?:[^"\\]|\\.)*{SECRET_MARK}(?:[^"\\]|\\.)*""#)).unwrap()
    });
    QUOTED_SECRET
        .replace_all(line, "(sensitive value)")
        .into_owned()
}

/// Checks that every terraform line appears, in order, in cascade's text; returns the text.
fn assert_oracle(case: &str) -> String {
    let planned = plan_case(case);
    let rendered = RenderedPlan::from_show_json(&planned.json, &unlimited())
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    let ours: Vec<String> = rendered.text().lines().map(normalise).collect();
    let expected = terraform_lines(&planned.human);
    assert!(
        !expected.is_empty(),
        "{case}: terraform showed no changes:\n{}",
        planned.human
    );
    let mut at = 0;
    let mut missing = Vec::new();
    for line in &expected {
        let want = normalise(&masked(line));
        let with_replace = format!("{want} # forces replacement");
        match ours[at..]
            .iter()
            .position(|o| *o == want || *o == with_replace)
        {
            Some(found) => at += found + 1,
            None => missing.push(line.clone()),
        }
    }
    assert!(
        missing.is_empty(),
        "{case}: terraform lines missing from cascade's rendering (in order):\n{}\n\n\
         terraform:\n{}\n\ncascade:\n{}",
        missing.join("\n"),
        expected.join("\n"),
        rendered.text()
    );
    assert!(
        !rendered.text().contains(SECRET_MARK),
        "{case}: a sensitive value is in cascade's rendering:\n{}",
        rendered.text()
    );
    assert_eq!(rendered.cut_lines(), 0);
    rendered.text().to_string()
}

/// Random object ids replaced, so the snapshot is stable.
fn stable(text: &str) -> String {
    static UUID: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
    });
    UUID.replace_all(text, "<uuid>").into_owned()
}

macro_rules! oracle_case {
    ($name:ident) => {
        #[test]
        fn $name() {
            let text = assert_oracle(stringify!($name));
            insta::assert_snapshot!(stringify!($name), stable(&text));
        }
    };
}

oracle_case!(update);
oracle_case!(replace);
oracle_case!(create_destroy);
oracle_case!(sensitive);
oracle_case!(unknowns);
oracle_case!(moved_import_forget);
oracle_case!(strings);
oracle_case!(outputs);
oracle_case!(data_read);
oracle_case!(lists);
oracle_case!(types);
