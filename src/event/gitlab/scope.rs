//! Which GitLab project a delivery may speak for. A webhook secret token is typed into
//! a project's settings by its maintainers, so a secret given for one project
//! (`PROJECT=SECRET` in `--gitlab-webhook-secret-file`) authenticates deliveries about
//! that project only: one maintainer's secret cannot speak for another's project. A
//! secret given plainly speaks for every project, as before.
//!
//! Also the project a body names ([`HookProject::read`]), read leniently from any hook,
//! so the receiver can hold it to the secret and to the configured instance's origin
//! before anything is stored. Never decides what to do with a delivery.

use secrecy::{ExposeSecret, SecretSlice};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::TokenError;

/// A project as an operator names it beside a secret: its numeric id (`1234`) or its
/// full path with namespace (`acme/platform/infra`, matched ignoring case as GitLab
/// routes it). A path has at least one `/`, so the two never read alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectKey {
    Id(u64),
    /// Lowercase.
    Path(String),
}

impl ProjectKey {
    /// `text` as a project id or path; `None` when it is neither.
    pub fn parse(text: &str) -> Option<ProjectKey> {
        let text = text.trim();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return text.parse().ok().map(ProjectKey::Id);
        }
        (text.contains('/') && super::is_project_path(text))
            .then(|| ProjectKey::Path(text.to_ascii_lowercase()))
    }

    /// Whether this names the project with `id` or `path`.
    fn names(&self, project: &HookProject) -> bool {
        match self {
            ProjectKey::Id(id) => project.id == Some(*id),
            ProjectKey::Path(path) => project
                .path_with_namespace
                .as_deref()
                .is_some_and(|p| p.eq_ignore_ascii_case(path)),
        }
    }
}

impl std::fmt::Display for ProjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProjectKey::Id(id) => write!(f, "{id}"),
            ProjectKey::Path(path) => f.write_str(path),
        }
    }
}

/// The GitLab webhook's secret tokens: those for every project (several while
/// rotating), and those for one project each. `Debug` never shows one (`secrecy`).
#[derive(Clone, Debug, Default)]
pub struct WebhookSecrets {
    pub any_project: Vec<SecretSlice<u8>>,
    pub per_project: Vec<(ProjectKey, SecretSlice<u8>)>,
}

impl From<Vec<Vec<u8>>> for WebhookSecrets {
    /// Secrets for every project.
    fn from(any_project: Vec<Vec<u8>>) -> WebhookSecrets {
        WebhookSecrets {
            any_project: any_project.into_iter().map(SecretSlice::from).collect(),
            per_project: Vec::new(),
        }
    }
}

/// For whom an accepted token speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Speaks {
    /// A secret for every project matched.
    AnyProject,
    /// Only secrets given for these projects matched.
    For(Vec<ProjectKey>),
}

impl Speaks {
    /// Whether a delivery about `project` is this token's to send.
    pub fn covers(&self, project: &HookProject) -> bool {
        match self {
            Speaks::AnyProject => true,
            Speaks::For(keys) => keys.iter().any(|k| k.names(project)),
        }
    }
}

impl WebhookSecrets {
    /// Reads each of `values` (from the flag's environment twin and file): `PROJECT=SECRET`
    /// when the text before the first `=` is a project id or path and the rest is a
    /// secret (not empty, not starting with `=`: base64 padding stays part of a plain
    /// secret), else a secret for every project. Empty values are skipped.
    pub fn parse(values: Vec<String>) -> WebhookSecrets {
        let mut secrets = WebhookSecrets::default();
        for value in values {
            let scoped = value.split_once('=').and_then(|(project, secret)| {
                let secret = secret.trim();
                let is_secret = !secret.is_empty() && !secret.starts_with('=');
                ProjectKey::parse(project)
                    .filter(|_| is_secret)
                    .map(|key| (key, secret.as_bytes().to_vec().into()))
            });
            match scoped {
                Some(scoped) => secrets.per_project.push(scoped),
                None if !value.trim().is_empty() => secrets
                    .any_project
                    .push(value.trim().as_bytes().to_vec().into()),
                None => {}
            }
        }
        secrets
    }

    /// No secret at all: no delivery can be authenticated.
    pub fn is_empty(&self) -> bool {
        self.values().all(<[u8]>::is_empty)
    }

    /// Every secret's value, for redaction and to check a token against.
    pub fn values(&self) -> impl Iterator<Item = &[u8]> {
        self.any_project
            .iter()
            .chain(self.per_project.iter().map(|(_, s)| s))
            .map(ExposeSecret::expose_secret)
    }

    /// Checks `X-Gitlab-Token` (GitLab sends the secret itself) against every secret in
    /// constant time (both sides hashed, every secret tried) and says for whom it speaks.
    /// Empty secrets are skipped; an empty token matches nothing.
    pub fn verify(&self, header: Option<&str>) -> Result<Speaks, TokenError> {
        let token = header.ok_or(TokenError::Missing)?;
        let given = Sha256::digest(token.as_bytes());
        let matches = |secret: &[u8]| bool::from(Sha256::digest(secret).ct_eq(&given));
        let mut any_secret = false;
        let mut any_project = false;
        let mut projects = Vec::new();
        let any = self.any_project.iter().map(ExposeSecret::expose_secret);
        for secret in any.filter(|s| !s.is_empty()) {
            any_secret = true;
            any_project |= matches(secret);
        }
        let per_project = self.per_project.iter().map(|(k, s)| (k, s.expose_secret()));
        for (key, secret) in per_project.filter(|(_, s)| !s.is_empty()) {
            any_secret = true;
            if matches(secret) {
                projects.push(key.clone());
            }
        }
        if !any_secret {
            return Err(TokenError::NoSecret);
        }
        if token.is_empty() {
            return Err(TokenError::Mismatch);
        }
        match (any_project, projects.is_empty()) {
            (true, _) => Ok(Speaks::AnyProject),
            (false, false) => Ok(Speaks::For(projects)),
            (false, true) => Err(TokenError::Mismatch),
        }
    }
}

/// The project a GitLab hook's body names (`project`: every hook cascade receives has
/// it), each field as sent, if sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct HookProject {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub path_with_namespace: Option<String>,
    #[serde(default)]
    pub web_url: Option<String>,
    #[serde(default)]
    pub git_http_url: Option<String>,
}

impl HookProject {
    /// The `project` of a hook's body; `None` when the body has none (or is no JSON).
    pub fn read(body: &[u8]) -> Option<HookProject> {
        #[derive(Deserialize)]
        struct Hook {
            project: Option<HookProject>,
        }
        serde_json::from_slice::<Hook>(body).ok()?.project
    }

    /// The project's URLs (web page, clone URL) as sent.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        [&self.web_url, &self.git_http_url]
            .into_iter()
            .filter_map(|u| u.as_deref())
    }

    /// How a log line names it: the path, else the id.
    pub fn name(&self) -> String {
        match (&self.path_with_namespace, self.id) {
            (Some(path), _) => path.chars().take(256).collect(),
            (None, Some(id)) => format!("project {id}"),
            (None, None) => "an unnamed project".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(id: u64, path: &str) -> HookProject {
        HookProject {
            id: Some(id),
            path_with_namespace: Some(path.into()),
            ..HookProject::default()
        }
    }

    #[test]
    fn secret_lines_name_a_project_or_none() {
        let secrets = WebhookSecrets::parse(
            [
                "acme/platform/infra=alpha",
                "42 = beta",
                "shared-secret",
                // Base64 keeps its padding: these are plain secrets.
                "Zm9v/YmFy==",
                "Zm9vYmF/=",
                // Not a project before `=`.
                "no-slash=gamma",
                "",
            ]
            .map(String::from)
            .to_vec(),
        );
        let per_project: Vec<(ProjectKey, &[u8])> = secrets
            .per_project
            .iter()
            .map(|(key, secret)| (key.clone(), secret.expose_secret()))
            .collect();
        assert_eq!(
            per_project,
            [
                (
                    ProjectKey::Path("acme/platform/infra".into()),
                    &b"alpha"[..]
                ),
                (ProjectKey::Id(42), &b"beta"[..]),
            ]
        );
        let any_project: Vec<&[u8]> = secrets
            .any_project
            .iter()
            .map(ExposeSecret::expose_secret)
            .collect();
        assert_eq!(
            any_project,
            [
                b"shared-secret".to_vec(),
                b"Zm9v/YmFy==".to_vec(),
                b"Zm9vYmF/=".to_vec(),
                b"no-slash=gamma".to_vec()
            ]
        );
        assert!(!format!("{secrets:?}").contains("alpha"));
    }

    #[test]
    fn a_projects_secret_speaks_for_that_project_only() {
        let secrets = WebhookSecrets::parse(
            ["Acme/Infra=a-secret", "7=b-secret", "shared"]
                .map(String::from)
                .to_vec(),
        );
        let (a, b) = (project(1, "acme/infra"), project(7, "bob/infra"));
        let speaks = secrets.verify(Some("a-secret")).unwrap();
        assert!(speaks.covers(&a) && !speaks.covers(&b));
        let speaks = secrets.verify(Some("b-secret")).unwrap();
        assert!(speaks.covers(&b) && !speaks.covers(&a));
        assert!(!speaks.covers(&HookProject::default()));
        assert_eq!(secrets.verify(Some("shared")), Ok(Speaks::AnyProject));
        assert_eq!(secrets.verify(Some("other")), Err(TokenError::Mismatch));
        assert_eq!(secrets.verify(Some("")), Err(TokenError::Mismatch));
        assert_eq!(secrets.verify(None), Err(TokenError::Missing));
        assert_eq!(
            WebhookSecrets::default().verify(Some("x")),
            Err(TokenError::NoSecret)
        );
    }

    #[test]
    fn a_bodys_project_is_read_from_any_hook() {
        let body = br#"{"object_kind":"push","project":{"id":3,"path_with_namespace":"g/p","web_url":"https://gl/g/p","git_http_url":"https://gl/g/p.git","extra":1}}"#;
        let read = HookProject::read(body).unwrap();
        assert_eq!(read.name(), "g/p");
        assert_eq!(
            read.urls().collect::<Vec<_>>(),
            ["https://gl/g/p", "https://gl/g/p.git"]
        );
        assert_eq!(HookProject::read(b"{}"), None);
        assert_eq!(HookProject::read(b"not json"), None);
    }
}
