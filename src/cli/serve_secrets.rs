//! Where `cascade serve`'s secrets may come from, and reading the files that hold them.
//!
//! A process's command line is readable by every local user (`/proc/<pid>/cmdline`,
//! `ps`), so the webhook secrets, the GitLab signing token and a database URL
//! holding a password are refused as flags. Each stays allowed through its
//! `CASCADE_*` environment twin (`/proc/<pid>/environ` is readable only by the
//! process's user, and by root alone once cascade is not dumpable:
//! `private_dir::protect_process`) or from the file its `--…-file` flag names.
//! The App's private key and the GitLab token were files from the start.
//!
//! Owns: which flags are secrets, the refusal, and reading the secret files
//! (each once, at start). Never puts a secret's value, nor a secret file's
//! content, in a message.

use anyhow::{Context, bail};
use clap::ArgMatches;
use clap::parser::ValueSource;
use std::path::Path;

/// A secret flag of `cascade serve`, and the file flag that may hold it instead.
pub(super) struct SecretFlag {
    /// clap's id of the flag (its field in `ServeArgs`).
    id: &'static str,
    flag: &'static str,
    env: &'static str,
    file_flag: &'static str,
    /// What the file must hold, for the error saying it does not.
    what: &'static str,
}

pub(super) const GITHUB_WEBHOOK_SECRET: SecretFlag = SecretFlag {
    id: "github_webhook_secret",
    flag: "--github-webhook-secret",
    env: "CASCADE_GITHUB_WEBHOOK_SECRET",
    file_flag: "--github-webhook-secret-file",
    what: "the GitHub App's webhook secret",
};

pub(super) const GITLAB_WEBHOOK_SECRET: SecretFlag = SecretFlag {
    id: "gitlab_webhook_secret",
    flag: "--gitlab-webhook-secret",
    env: "CASCADE_GITLAB_WEBHOOK_SECRET",
    file_flag: "--gitlab-webhook-secret-file",
    what: "the GitLab webhook's secret token",
};

pub(super) const GITLAB_SIGNING_TOKEN: SecretFlag = SecretFlag {
    id: "gitlab_signing_token",
    flag: "--gitlab-signing-token",
    env: "CASCADE_GITLAB_SIGNING_TOKEN",
    file_flag: "--gitlab-signing-token-file",
    what: "the GitLab webhook's signing token (whsec_…)",
};

pub(super) const DATABASE_URL: SecretFlag = SecretFlag {
    id: "database_url",
    flag: "--database-url",
    env: "CASCADE_DATABASE_URL",
    file_flag: "--database-url-file",
    what: "the database URL",
};

const SECRET_FLAGS: [&SecretFlag; 4] = [
    &GITHUB_WEBHOOK_SECRET,
    &GITLAB_WEBHOOK_SECRET,
    &GITLAB_SIGNING_TOKEN,
    &DATABASE_URL,
];

/// The ids of the secret flags `serve` (the matches of `cascade serve`) took from
/// the command line, not from their environment twins.
pub(super) fn given_on_command_line(serve: &ArgMatches) -> Vec<&'static str> {
    SECRET_FLAGS
        .iter()
        .filter(|s| serve.value_source(s.id) == Some(ValueSource::CommandLine))
        .map(|s| s.id)
        .collect()
}

/// Refuses the secrets given on the command line (`ids`, from
/// [`given_on_command_line`]), each with what to do instead. A database URL
/// without a password is no secret and may stay a flag.
pub(super) fn refuse_command_line(ids: &[&str], database_url: Option<&str>) -> anyhow::Result<()> {
    let refused: Vec<String> = SECRET_FLAGS
        .iter()
        .filter(|s| ids.contains(&s.id))
        .filter(|s| s.id != DATABASE_URL.id || database_url.is_some_and(holds_password))
        .map(|s| {
            let (given, it) = if s.id == DATABASE_URL.id {
                (
                    format!("{} holds a password; a secret given as a flag", s.flag),
                    "the URL",
                )
            } else {
                (format!("a secret given as {}", s.flag), "it")
            };
            format!(
                "{given} is readable by every local user (/proc/<pid>/cmdline): set {} instead, \
                 or put {it} in a file and pass {}",
                s.env, s.file_flag
            )
        })
        .collect();
    if !refused.is_empty() {
        bail!("{}", refused.join("\n"));
    }
    Ok(())
}

/// Whether `url` carries a password: in its user-info (`USER:PASSWORD@`) or as
/// the `password` parameter, both of which PostgreSQL's driver reads. A URL that
/// does not parse is refused later by the store, without showing it.
fn holds_password(url: &str) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    url.password().is_some_and(|p| !p.is_empty())
        || url
            .query_pairs()
            .any(|(key, value)| key == "password" && !value.is_empty())
}

impl SecretFlag {
    /// `given` (by the flag or its environment twin) and the secrets in `file`:
    /// one per line or separated by commas, as the flag takes them.
    pub(super) fn list(
        &self,
        given: Vec<String>,
        file: Option<&Path>,
    ) -> anyhow::Result<Vec<String>> {
        let read = match file {
            Some(file) => self.read(file, &['\n', ','])?,
            None => Vec::new(),
        };
        Ok(given.into_iter().chain(read).collect())
    }

    /// `given`, or the one secret in `file` (the two flags exclude each other).
    pub(super) fn one(
        &self,
        given: Option<String>,
        file: Option<&Path>,
    ) -> anyhow::Result<Option<String>> {
        match file {
            // No separator: the whole content, trimmed, is the one value.
            Some(file) => Ok(self.read(file, &[])?.pop()),
            None => Ok(given),
        }
    }

    /// The values in `file` between `separators`, trimmed; at least one.
    fn read(&self, file: &Path, separators: &[char]) -> anyhow::Result<Vec<String>> {
        let text = std::fs::read_to_string(file).with_context(|| {
            format!(
                "cannot read {} from {} ({})",
                self.what,
                file.display(),
                self.file_flag
            )
        })?;
        let values: Vec<String> = text
            .split(separators)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if values.is_empty() {
            bail!(
                "{} ({}) is empty: put {} in it",
                file.display(),
                self.file_flag,
                self.what
            );
        }
        Ok(values)
    }
}
