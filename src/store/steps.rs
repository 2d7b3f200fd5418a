//! What a workflow's `run` step did, as a run keeps it: stored with its unit's result
//! (`unit_results.steps`, migration 0011) and copied into the plan record, so the comment
//! shows it and a resumed run knows which steps finished (a finished `post_apply` step is
//! never run again).
//!
//! The output is the step's, redacted and without the server's paths, at most
//! 64 KiB (the executor keeps the end); the comment shows
//! less. Never holds a value the redactor has not seen.

use serde::{Deserialize, Serialize};

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Exited 0.
    Passed,
    /// Failed (a non-zero exit, a timeout, a refusal): the unit failed with it.
    Failed,
    /// Failed with `ignore_errors`: a warning; the unit went on.
    Warned,
}

/// One step's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The hook (`pre_plan`, `post_apply`, …).
    pub hook: String,
    /// Its place in the hook's list (0-based): with `hook`, what names it across a restart.
    pub index: usize,
    pub name: String,
    pub status: StepStatus,
    /// The exit code, when it ran to an exit.
    #[serde(default)]
    pub code: Option<i32>,
    /// Why it did not run to an exit (a timeout, the sandbox's refusal…), else empty.
    #[serde(default)]
    pub error: String,
    /// Its output, redacted (the end of it when `truncated`).
    pub output: String,
    #[serde(default)]
    pub truncated: bool,
    /// Shown in the comment: by `visible_on` and how it ended.
    pub visible: bool,
    /// `format: markdown`: shown as inert Markdown, else as a code block.
    #[serde(default)]
    pub markdown: bool,
    pub took_ms: u64,
}

impl StepRecord {
    /// `post_apply` step 2 `notify`: what a message calls it.
    pub fn label(&self) -> String {
        format!("`{}` ({})", self.name, self.hook)
    }

    /// Why it failed, for a unit's detail: "step `tflint` (pre_plan) failed with exit code 1".
    pub fn failure(&self) -> String {
        match self.code {
            Some(code) if self.error.is_empty() => {
                format!("step {} failed with exit code {code}", self.label())
            }
            _ => format!("step {} failed: {}", self.label(), self.error),
        }
    }
}
