//! Calibrates the depth limits against the discovery stack: the deepest
//! nesting of every kind that cascade accepts (and one level more, which it
//! refuses) is evaluated on a thread with a quarter of
//! [`DISCOVERY_STACK_BYTES`]. An overflow here would crash the test binary, so
//! a pass means the real threads have at least four times the stack they need.

use super::discover::discover_here;
use super::limits::{DISCOVERY_STACK_BYTES, MAX_EVAL_DEPTH, MAX_READ_DEPTH, MAX_VALUE_DEPTH};
use super::parse::HclFile;
use super::{Discovery, scratch_repository};
use crate::problem::ProblemKind;

/// Discovers `files` on one thread with a quarter of the discovery stack.
fn on_a_quarter_stack(files: &[(String, String)]) -> Discovery {
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_bytes()))
        .collect();
    let (_tmp, opts, _) = scratch_repository(&files).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .stack_size(DISCOVERY_STACK_BYTES / 4)
        .build()
        .unwrap();
    pool.install(|| discover_here(&opts).0)
}

fn unit(text: String) -> Vec<(String, String)> {
    vec![
        ("app/terragrunt.hcl".to_string(), text),
        ("vpc/terragrunt.hcl".to_string(), String::new()),
    ]
}

/// Asserts that the only problems are limits whose message contains `limit`
/// (none at all when `limit` is `None`).
fn expect(d: &Discovery, limit: Option<&str>, case: &str) {
    match limit {
        None => assert!(d.problems.is_empty(), "{case}: {:#?}", d.problems),
        Some(needle) => {
            assert!(
                d.problems
                    .iter()
                    .any(|p| p.kind == ProblemKind::Unresolved && p.message.contains(needle)),
                "{case}: no {needle:?} in {:#?}",
                d.problems
            );
        }
    }
}

/// An expression `levels` deep of one kind, around `"../vpc"`.
fn nested(kind: &str, levels: usize) -> String {
    let (open, close) = match kind {
        "list" => ("[", "][0]"),
        "paren" => ("(", ")"),
        "object" => ("{ k = ", " }.k"),
        "call" => ("lower(", ")"),
        "template" => ("\"${", "}\""),
        "for" => ("[for v in [1] : ", "][0]"),
        "conditional" => ("true ? ", " : \"\""),
        "try" => ("try(", ", \"\")"),
        other => unreachable!("{other}"),
    };
    format!("{}\"../vpc\"{}", open.repeat(levels), close.repeat(levels))
}

#[test]
fn the_deepest_expressions_the_parser_accepts_evaluate() {
    for kind in [
        "list",
        "paren",
        "object",
        "call",
        "template",
        "for",
        "conditional",
        "try",
    ] {
        let text = |levels| {
            format!(
                "dependencies {{\n  paths = [{}]\n}}\n",
                nested(kind, levels)
            )
        };
        // hcl-edit refuses deeper nesting itself; find where it stops.
        let deepest = (1..200)
            .take_while(|&n| HclFile::parse("x.hcl", &text(n)).is_ok())
            .last()
            .unwrap();
        assert!(deepest > 20, "{kind}: {deepest}");
        let text = text(deepest);
        let d = on_a_quarter_stack(&unit(text));
        expect(&d, None, kind);
        assert_eq!(d.units[0].dependencies.len(), 1, "{kind}");
    }
}

/// One hop of a chain of locals, in several shapes: each shape recurses
/// through different functions of the evaluator.
fn hop(shape: &str, previous: &str) -> String {
    match shape {
        "plain" => format!("local.{previous}"),
        "call" => format!("lower(local.{previous})"),
        "template" => format!("\"${{local.{previous}}}\""),
        "for" => format!("[for v in [local.{previous}] : v][0]"),
        "try" => format!("try(local.{previous}, \"\")"),
        "operators" => format!("true && true ? local.{previous} : \"\""),
        other => unreachable!("{other}"),
    }
}

fn chain(shape: &str, hops: usize) -> String {
    let mut text = String::from("locals {\n  l0 = \"../vpc\"\n");
    for i in 1..=hops {
        text.push_str(&format!(
            "  l{i} = {}\n",
            hop(shape, &format!("l{}", i - 1))
        ));
    }
    text.push_str(&format!(
        "}}\n\ndependencies {{\n  paths = [local.l{hops}]\n}}\n"
    ));
    text
}

#[test]
fn chains_of_locals_to_the_depth_limit_fit_the_stack() {
    for shape in ["plain", "call", "template", "for", "try", "operators"] {
        // Longer than any chain the limit allows: evaluation recurses to exactly the limit.
        let d = on_a_quarter_stack(&unit(chain(shape, MAX_EVAL_DEPTH as usize + 10)));
        expect(&d, Some("nests deeper"), shape);
        // A short chain of the same shape is fine.
        let d = on_a_quarter_stack(&unit(chain(shape, 20)));
        expect(&d, None, shape);
    }
}

#[test]
fn reads_nested_to_the_limit_fit_the_stack() {
    // Each file read also carries a chain of locals.
    let mut files = unit(
        "locals {\n  c = read_terragrunt_config(\"../r/0.hcl\")\n}\n\ndependencies {\n  paths = [local.c.locals.l20]\n}\n"
            .to_string(),
    );
    for i in 0..=MAX_READ_DEPTH {
        let mut text = format!(
            "locals {{\n  l0 = read_terragrunt_config(\"{}.hcl\").locals.l20\n",
            i + 1
        );
        for j in 1..=20 {
            text.push_str(&format!("  l{j} = lower(local.l{})\n", j - 1));
        }
        text.push_str("}\n");
        files.push((format!("r/{i}.hcl"), text));
    }
    files.push((
        format!("r/{}.hcl", MAX_READ_DEPTH + 1),
        "locals {\n  l20 = \"../vpc\"\n}\n".to_string(),
    ));
    let d = on_a_quarter_stack(&files);
    assert!(
        d.problems
            .iter()
            .any(|p| p.message.contains("cascade's limit")),
        "{:#?}",
        d.problems
    );
}

/// A file whose locals nest one list deeper each; `read_terragrunt_config`
/// evaluates them in order, so each is built on the one before it (cached)
/// and the value grows deep while evaluation stays shallow.
fn deep_values(levels: usize) -> String {
    let mut text = String::from("locals {\n  v0 = \"../vpc\"\n");
    for i in 1..=levels {
        text.push_str(&format!("  v{i} = [local.v{}]\n", i - 1));
    }
    text.push_str("}\n");
    text
}

#[test]
fn values_nested_to_the_limit_fit_the_stack() {
    let levels = MAX_VALUE_DEPTH;
    // Copied, compared, encoded, decoded, flattened: every recursive walk of a value.
    let mut files = unit(format!(
        "locals {{\n  v = read_terragrunt_config(\"../values.hcl\").locals.v{levels}\n  same = local.v == local.v\n  json = jsonencode(local.v)\n  flat = flatten(local.v)[0]\n}}\n\ndependencies {{\n  paths = [local.same && length(local.json) > 0 ? local.flat : \"\"]\n}}\n"
    ));
    files.push(("values.hcl".to_string(), deep_values(levels)));
    let d = on_a_quarter_stack(&files);
    expect(&d, None, "values");

    let mut files = unit(format!(
        "locals {{\n  v = read_terragrunt_config(\"../values.hcl\").locals.v{}\n}}\n\ndependencies {{\n  paths = flatten(local.v)\n}}\n",
        levels + 1
    ));
    files.push(("values.hcl".to_string(), deep_values(levels + 1)));
    let d = on_a_quarter_stack(&files);
    expect(&d, Some("a value nests deeper"), "values over the limit");
}

#[test]
fn decoded_json_as_deep_as_serde_allows_fits_the_stack() {
    let json = format!("{}\\\"../vpc\\\"{}", "[".repeat(127), "]".repeat(127));
    let text = format!(
        "locals {{\n  j = jsondecode(\"{json}\")\n}}\n\ndependencies {{\n  paths = flatten(local.j)\n}}\n"
    );
    let d = on_a_quarter_stack(&unit(text));
    expect(&d, None, "json");
}
