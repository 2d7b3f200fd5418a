//! The environment terraform, tofu and terragrunt run with: an allow-list of
//! the parent's variables (the one list, documented in README), the names
//! given with `--pass-env`, and what cascade itself sets. The child never sees
//! anything else of the server's environment, and never a `CASCADE_*`
//! variable, even when named with `--pass-env`.

use crate::redact::Redactor;
use std::ffi::{OsStr, OsString};
use std::sync::RwLock;

/// Variables passed by exact name.
const NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TZ",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "KUBECONFIG",
];

/// Variable families passed by prefix: locale, the tools' own settings
/// (`TF_VAR_*`, `TF_TOKEN_*`, `TF_CLI_CONFIG_FILE`, `TG_*`, `TERRAGRUNT_*`), and
/// cloud credentials.
const PREFIXES: &[&str] = &[
    "LC_",
    "TF_",
    "TG_",
    "TERRAGRUNT_",
    "AWS_",
    "GOOGLE_",
    "CLOUDSDK_",
    "ARM_",
    "AZURE_",
];

/// Never passed, whatever the lists say: cascade's own configuration and secrets.
const NEVER: &str = "CASCADE_";

/// What every command gets on top, whatever the parent has.
pub const FIXED: &[(&str, &str)] = &[
    ("TF_IN_AUTOMATION", "1"),
    ("CHECKPOINT_DISABLE", "1"),
    ("TF_INPUT", "0"),
    ("TG_NON_INTERACTIVE", "true"),
    ("TERRAGRUNT_NON_INTERACTIVE", "true"),
    ("NO_COLOR", "1"),
];

/// What cascade sets for every command besides [`FIXED`]: the tools' search
/// path, their own home and temporary directory, the provider cache.
const OWN: &[&str] = &["PATH", "HOME", "TMPDIR", "TF_PLUGIN_CACHE_DIR"];

/// Whether cascade sets `name` itself for every command (or never passes it): an
/// operator's per-unit variables may not (`--unit-env-file`), so none changes how
/// cascade runs the tools.
pub(super) fn set_by_cascade(name: &str) -> bool {
    name.starts_with(NEVER) || OWN.contains(&name) || FIXED.iter().any(|(k, _)| *k == name)
}

/// Names given to `cascade serve --pass-env`, for executors built without their own list.
static DEFAULT_PASS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Sets the `--pass-env` names that [`super::ProcessExecutor::new`] uses (the
/// server's executor is built inside `server::start`, from its command line).
pub fn set_default_pass_env(names: Vec<String>) {
    *DEFAULT_PASS.write().unwrap_or_else(|p| p.into_inner()) = names;
}

pub(super) fn default_pass_env() -> Vec<String> {
    DEFAULT_PASS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// Whether the child gets the parent's variable `name`.
pub fn passes(name: &str, pass: &[String]) -> bool {
    !name.starts_with(NEVER)
        && (NAMES.contains(&name)
            || PREFIXES.iter().any(|p| name.starts_with(p))
            || pass.iter().any(|p| p == name))
}

/// The variables a child process gets from its parent.
#[derive(Clone, Debug, Default)]
pub struct ChildEnv {
    vars: Vec<(OsString, OsString)>,
}

impl ChildEnv {
    /// The allowed part of `parent` (usually `std::env::vars_os()`), plus `pass`.
    pub fn from_parent(
        parent: impl IntoIterator<Item = (OsString, OsString)>,
        pass: &[String],
    ) -> ChildEnv {
        let mut vars: Vec<(OsString, OsString)> = parent
            .into_iter()
            .filter(|(name, _)| name.to_str().is_some_and(|n| passes(n, pass)))
            .collect();
        vars.sort();
        ChildEnv { vars }
    }

    /// Every variable, by name.
    pub fn vars(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }

    /// A redactor for this child's output: it removes the value of every
    /// `TF_VAR_*` and `TF_TOKEN_*` variable and of every variable whose name
    /// says it holds a secret, besides the registered secrets.
    pub fn redactor(&self) -> Redactor {
        Redactor::with_secrets(
            self.vars
                .iter()
                .filter(|(name, _)| name.to_str().is_some_and(holds_secret))
                .filter_map(|(_, value)| value.to_str()),
        )
    }
}

fn holds_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("TF_VAR_")
        || upper.starts_with("TF_TOKEN_")
        || ["SECRET", "TOKEN", "PASSWORD", "CREDENTIAL", "KEY"]
            .iter()
            .any(|w| upper.contains(w))
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_configurations_list_of_cascades_own_variables_is_this_one() {
        // `.cascade.yaml` refuses a workflow setting what cascade sets (config sits below
        // exec, so it keeps its own copy of the list): the two must say the same.
        let ours: Vec<&str> = OWN
            .iter()
            .copied()
            .chain(FIXED.iter().map(|(k, _)| *k))
            .collect();
        let mut theirs = crate::config::workflows::SET_BY_CASCADE.to_vec();
        let mut ours_sorted = ours.clone();
        ours_sorted.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(ours_sorted, theirs);
        assert!(crate::config::workflows::set_by_cascade("CASCADE_ANYTHING"));
    }
    use super::*;

    #[test]
    fn only_the_allow_list_and_passed_names_get_through() {
        let parent = [
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("TF_VAR_db", "x"),
            ("AWS_PROFILE", "p"),
            ("CASCADE_GITHUB_WEBHOOK_SECRET", "s"),
            ("DATABASE_URL", "postgres://u:p@h"),
            ("EXTRA", "e"),
            ("CASCADE_PASSED", "no"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env = ChildEnv::from_parent(parent, &["EXTRA".into(), "CASCADE_PASSED".into()]);
        let names: Vec<String> = env
            .vars()
            .map(|(k, _)| k.to_string_lossy().to_string())
            .collect();
        assert_eq!(
            names,
            ["AWS_PROFILE", "EXTRA", "LC_ALL", "PATH", "TF_VAR_db"]
        );
    }
}
