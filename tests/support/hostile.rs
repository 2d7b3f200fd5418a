//! A pull request's hostile text for the end-to-end tests of `tests/it/bot_inert.rs` (GitHub)
//! and `tests/it/gitlab_inert.rs` (GitLab): unit directories named to ping a team or to break
//! code spans and tables, and a precondition whose `error_message` carries a mention, a
//! link, an image and a tag, as the real terraform plans them.
#![allow(dead_code)]

use crate::support::markdown_oracle::Reading;

/// The precondition's message, as the pull request's author wrote it.
pub const MESSAGE: &str =
    "✅ Approved by @acme/security [x](https://evil) ![i](https://evil/i.png) <img src=x>";
/// A unit whose name pings a team when written plainly.
pub const MENTION_UNIT: &str = "dev/notify @acme/platform-team";
/// A unit whose name has backtick runs and a table bar.
pub const TICKS_UNIT: &str = "dev/a`b|c ``d``";
/// A unit whose plan fails on the precondition.
pub const GATE_UNIT: &str = "dev/gate";

/// A `terraform_data` named `name`.
pub fn resource(name: &str) -> String {
    format!("resource \"terraform_data\" \"{name}\" {{\n  input = \"{name}\"\n}}\n")
}

/// A resource whose precondition fails at plan time with [`MESSAGE`]. (terraform refuses a
/// constant `condition = false`: the condition must refer to something.)
pub fn gate() -> String {
    format!(
        "resource \"terraform_data\" \"gate\" {{\n  input = \"x\"\n  lifecycle {{\n    \
         precondition {{\n      condition     = length(path.cwd) < 0\n      \
         error_message = \"{MESSAGE}\"\n    }}\n  }}\n}}\n"
    )
}

/// The files (path, text) of a unit at `dir` holding `main`.
pub fn unit_files(dir: &str, main: String) -> Vec<(String, String)> {
    vec![
        (format!("{dir}/terragrunt.hcl"), String::new()),
        (format!("{dir}/main.tf"), main),
    ]
}

/// The three hostile units: two that plan, one that fails.
pub fn hostile_units() -> Vec<(String, String)> {
    let mut files = unit_files(MENTION_UNIT, resource("mention"));
    files.extend(unit_files(TICKS_UNIT, resource("ticks")));
    files.extend(unit_files(GATE_UNIT, gate()));
    files
}

/// `files` as the worlds' `open_adding` takes them.
pub fn borrowed(files: &[(String, String)]) -> Vec<(&str, &str)> {
    files
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect()
}

/// The code blocks as a reader sees them, terraform's error box and line wrapping undone.
pub fn unboxed(reading: &Reading) -> String {
    let text = reading.blocks.join("\n").replace('│', " ");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
