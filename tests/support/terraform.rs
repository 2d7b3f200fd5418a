//! Running the real `terraform` in a test's own directory, with the variables that
//! would change what it does removed, so a developer's shell cannot change a test.

use std::path::Path;
use std::process::Command;

/// Runs terraform in `dir` and returns its stdout; panics with its stderr on failure.
pub fn terraform(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("terraform")
        .args(args)
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .env("TF_INPUT", "0")
        .env_remove("TF_CLI_ARGS")
        .env_remove("TF_CLI_ARGS_plan")
        .env_remove("TF_CLI_ARGS_apply")
        .env_remove("TF_WORKSPACE")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "could not run `terraform` ({e}): these tests need terraform 1.7 or later on PATH"
            )
        });
    assert!(
        out.status.success(),
        "terraform {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Applies the unit in `dir` by hand, outside cascade, with its `environment` input set to
/// `environment`: an out-of-band change its next plan sees as an update.
pub fn apply_by_hand(dir: &Path, environment: &str) {
    terraform(dir, &["init", "-input=false"]);
    let var = format!("environment={environment}");
    terraform(dir, &["apply", "-auto-approve", "-var", &var]);
}
