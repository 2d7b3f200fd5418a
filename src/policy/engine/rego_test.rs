//! Running a policy set's own tests: every `test_*` rule of its `*_test.rego` files,
//! as `opa test` and `conftest verify` do, so authors can test rules without the bot.
//!
//! Owns: finding the tests (rule names read from each test file's syntax tree), running
//! each under the time limit, and the per-test outcome. Must never: print (the CLI
//! does), or let a test see anything but the policies, its mocks and its `with` input.

use super::PolicyError;
use super::evaluator::{classify, compile, first_value, set_time_limit};
use super::limits::TEST_TIME;
use super::load::PolicyFile;
use regorus::Value;
use regorus::unstable::{Expr, Parser, Rule, RuleHead};

/// How one test ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestOutcome {
    /// The rule was true.
    Pass,
    /// The rule was false or undefined.
    Fail,
    /// Evaluating the rule failed (an error, a limit): the message says how.
    Error(String),
}

/// One `test_*` rule and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestResult {
    /// The test file's path, `/`-separated.
    pub file: String,
    /// The rule's full path: `data.main.test_deny_destroy`.
    pub name: String,
    pub outcome: TestOutcome,
}

/// Every test of a policy set, in file order, then in the order each file defines them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestReport {
    pub results: Vec<TestResult>,
}

impl TestReport {
    /// How many tests passed.
    pub fn passed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.outcome == TestOutcome::Pass)
            .count()
    }

    /// Whether every test passed (and there was at least one).
    pub fn all_passed(&self) -> bool {
        !self.results.is_empty() && self.passed() == self.results.len()
    }
}

/// Runs every `test_*` rule of `files`' `*_test.rego` files against all of `files`
/// (policies and tests compiled together, as `opa test` does). A file that does not
/// compile, or calls an impure builtin, fails the whole run.
pub fn run_tests(set: &str, files: &[PolicyFile]) -> Result<TestReport, PolicyError> {
    let all: Vec<&PolicyFile> = files.iter().collect();
    let engine = compile(set, &all)?;
    let mut report = TestReport::default();
    for file in files.iter().filter(|f| f.is_test()) {
        for name in test_rules(set, file)? {
            let mut engine = engine.clone();
            set_time_limit(&mut engine, TEST_TIME);
            let outcome = match engine.eval_query(name.clone(), false) {
                Ok(results) => match first_value(results) {
                    Value::Bool(true) => TestOutcome::Pass,
                    _ => TestOutcome::Fail,
                },
                Err(err) => TestOutcome::Error(classify(set, err, TEST_TIME).to_string()),
            };
            report.results.push(TestResult {
                file: file.path.clone(),
                name,
                outcome,
            });
        }
    }
    Ok(report)
}

/// The full paths of `file`'s `test_*` rules, each once, in the order it defines them.
fn test_rules(set: &str, file: &PolicyFile) -> Result<Vec<String>, PolicyError> {
    Ok(rule_names(set, file)?
        .into_iter()
        .filter(|(_, name)| name.starts_with("test_"))
        .map(|(package, name)| format!("data.{package}.{name}"))
        .collect())
}

/// The package of `file` and the names of the rules it defines at its top (each once, in
/// the order it defines them), read from its syntax tree: what a query cannot list.
pub(super) fn rule_names(
    set: &str,
    file: &PolicyFile,
) -> Result<Vec<(String, String)>, PolicyError> {
    let parse_error = |err: anyhow::Error| PolicyError::Parse {
        set: set.to_string(),
        message: format!("{err:#}").trim().to_string(),
    };
    let source = regorus::Source::from_contents(file.path.clone(), file.text.clone())
        .map_err(parse_error)?;
    // Rego v1, as `Engine` compiles it: v0's parser reads `if` as a name, and warns.
    let module = Parser::new(&source)
        .and_then(|mut parser| {
            parser.enable_rego_v1()?;
            parser.parse()
        })
        .map_err(parse_error)?;
    let package = module.package.refr.span().text().to_string();
    let mut names: Vec<(String, String)> = Vec::new();
    for rule in &module.policy {
        let Rule::Spec {
            head: RuleHead::Compr { refr, .. } | RuleHead::Set { refr, .. },
            ..
        } = rule.as_ref()
        else {
            continue;
        };
        if let Expr::Var { span, .. } = refr.as_ref() {
            let name = (package.clone(), span.text().to_string());
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    Ok(names)
}
