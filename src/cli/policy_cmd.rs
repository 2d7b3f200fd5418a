//! `cascade policy test`: runs a policy directory's `*_test.rego` tests, so authors can
//! test their rules without the bot. Prints one line per test (`ok` / `FAIL`) and a
//! summary; exit status 0 when every test passed, 1 when one failed or there was none,
//! 2 when the directory could not be read or compiled.
//!
//! Never evaluates a policy over a plan, and never reads `.cascade.yaml` yet: the
//! directory is `--dir` (default `policies`).

use super::PolicyTestArgs;
use super::repo::locate;
use crate::inert::visible_line;
use crate::policy::engine::{TestOutcome, load_set, run_tests};
use anyhow::Context as _;
use std::process::ExitCode;

pub fn test(args: &PolicyTestArgs) -> anyhow::Result<ExitCode> {
    let location = locate(args.repo.as_deref())?;
    let files = load_set(&location.dir, &args.dir).with_context(|| {
        format!(
            "cannot read the policies of {}; pass the policy directory with --dir PATH (relative to the repository)",
            location.dir.display()
        )
    })?;
    let report = run_tests(&args.dir, &files)?;
    let mut failed = 0;
    for result in &report.results {
        let name = visible_line(&format!("{}: {}", result.file, result.name)).into_owned();
        match &result.outcome {
            TestOutcome::Pass => println!("ok    {name}"),
            TestOutcome::Fail => {
                failed += 1;
                println!("FAIL  {name}");
            }
            TestOutcome::Error(message) => {
                failed += 1;
                println!("FAIL  {name}");
                // regorus's messages span lines (the location, the line, a caret).
                for line in message.lines() {
                    println!("      {}", visible_line(line));
                }
            }
        }
    }
    if report.results.is_empty() {
        println!(
            "no tests: no `test_*` rule in a *_test.rego file under {}",
            args.dir
        );
        return Ok(ExitCode::from(1));
    }
    println!(
        "{} tests: {} passed, {failed} failed",
        report.results.len(),
        report.passed()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
