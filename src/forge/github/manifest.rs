//! The GitHub App cascade asks GitHub to create (the App manifest flow), and the
//! one call that turns GitHub's temporary code into the new App's credentials.
//!
//! Owns the permissions and events cascade needs: [`APP_PERMISSIONS`] and
//! [`APP_EVENTS`] are the only list, written into every manifest and checked
//! against README.md by a test. Never logs, formats or keeps the private key or
//! webhook secret it receives: they go to the caller, who stores them.

use std::time::Duration;

use anyhow::{Context as _, bail};
use octocrab::Octocrab;
use serde::Deserialize;
use serde_json::{Value, json};

/// Who a permission is granted by: a repository, or the organisation that installs the App.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionScope {
    Repository,
    Organization,
}

/// One permission of the App: its manifest key, the name GitHub's settings page shows,
/// the access cascade needs, and why.
#[derive(Clone, Copy, Debug)]
pub struct AppPermission {
    /// The key in the manifest's `default_permissions` (`pull_requests`).
    pub key: &'static str,
    /// As GitHub's App settings page names it (`Pull requests`).
    pub title: &'static str,
    pub scope: PermissionScope,
    /// `read` or `write`.
    pub access: &'static str,
    pub why: &'static str,
}

/// Every permission cascade uses. `Organization` ones are asked for only when the App
/// is created for an organisation: a private App owned by a person can only be installed
/// on that person's repositories, where there are no teams to check.
pub const APP_PERMISSIONS: [AppPermission; 7] = [
    AppPermission {
        key: "checks",
        title: "Checks",
        scope: PermissionScope::Repository,
        access: "write",
        why: "the `cascade` check run on each head",
    },
    AppPermission {
        key: "contents",
        title: "Contents",
        scope: PermissionScope::Repository,
        access: "read",
        why: "fetching the repository to plan it",
    },
    AppPermission {
        key: "issues",
        title: "Issues",
        scope: PermissionScope::Repository,
        access: "write",
        why: "pull request comments and reactions, and the drift issue",
    },
    AppPermission {
        key: "merge_queues",
        title: "Merge queues",
        scope: PermissionScope::Repository,
        access: "read",
        why: "`merge_group` events, to set the `cascade` check on a merge queue's group",
    },
    AppPermission {
        key: "metadata",
        title: "Metadata",
        scope: PermissionScope::Repository,
        access: "read",
        why: "every App has it",
    },
    AppPermission {
        key: "pull_requests",
        title: "Pull requests",
        scope: PermissionScope::Repository,
        access: "write",
        why: "reading pull requests, their files and reviews",
    },
    AppPermission {
        key: "members",
        title: "Members",
        scope: PermissionScope::Organization,
        access: "read",
        why: "teams named in `apply_permission` (`GET /orgs/{org}/teams/{team}/memberships/{user}`)",
    },
];

/// The webhook events the App subscribes to (installation events are always sent).
pub const APP_EVENTS: [&str; 4] = [
    "pull_request",
    "issue_comment",
    "pull_request_review",
    "merge_group",
];

/// GitHub's longest App name.
const MAX_NAME_CHARS: usize = 34;

/// The manifest for an App served at `public_url` (no trailing `/`), owned by an
/// organisation when `for_organization`, else by the person creating it.
pub fn app_manifest(name: &str, public_url: &str, for_organization: bool) -> Value {
    let permissions: serde_json::Map<String, Value> = APP_PERMISSIONS
        .iter()
        .filter(|p| for_organization || p.scope == PermissionScope::Repository)
        .map(|p| (p.key.to_string(), Value::from(p.access)))
        .collect();
    json!({
        "name": name.chars().take(MAX_NAME_CHARS).collect::<String>(),
        "url": public_url,
        "description": "Plans and applies Terragrunt, OpenTofu and Terraform changes from pull requests.",
        "hook_attributes": { "url": format!("{public_url}/webhooks/github"), "active": true },
        "redirect_url": format!("{public_url}/setup/callback"),
        "setup_url": format!("{public_url}/setup/installed"),
        "setup_on_update": false,
        "request_oauth_on_install": false,
        "public": false,
        "default_permissions": permissions,
        "default_events": APP_EVENTS,
    })
}

/// The App GitHub created from the manifest, with the credentials it hands out once.
pub struct NewApp {
    pub id: u64,
    pub slug: String,
    /// The App's page (`https://github.com/apps/<slug>`); installs start at `<html_url>/installations/new`.
    pub html_url: String,
    pub private_key_pem: String,
    pub webhook_secret: String,
}

// The key and the secret never reach a log line through `{:?}`.
impl std::fmt::Debug for NewApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewApp")
            .field("id", &self.id)
            .field("slug", &self.slug)
            .field("html_url", &self.html_url)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct WireNewApp {
    id: u64,
    slug: String,
    html_url: String,
    pem: String,
    webhook_secret: Option<String>,
}

/// Whether `code` can be what GitHub put in the redirect (it goes into a URL path).
pub fn plausible_code(code: &str) -> bool {
    (1..=128).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Exchanges the manifest flow's temporary `code` for the new App
/// (`POST /app-manifests/{code}/conversions`, unauthenticated). A code works once,
/// within an hour.
pub async fn convert_manifest(api_url: &str, code: &str) -> anyhow::Result<NewApp> {
    if !plausible_code(code) {
        bail!("GitHub's code is not one GitHub sends: start again at /setup");
    }
    let api_url = api_url.trim_end_matches('/');
    let client = Octocrab::builder()
        .base_uri(api_url)
        .with_context(|| format!("the GitHub API URL {api_url:?} is not a valid URL"))?
        .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
        .set_connect_timeout(Some(Duration::from_secs(10)))
        .set_read_timeout(Some(Duration::from_secs(30)))
        .add_header(
            axum::http::header::ACCEPT,
            "application/vnd.github+json".to_string(),
        )
        .build()
        .context("could not build the GitHub HTTP client (are CA certificates installed?)")?;
    let response = client
        ._post(format!("/app-manifests/{code}/conversions"), None::<&()>)
        .await
        .context("cannot reach GitHub's API (--github-api-url) to fetch the new App")?;
    let status = response.status().as_u16();
    let body = client
        .body_to_string(response)
        .await
        .context("GitHub's answer with the new App was cut off: start again at /setup")?;
    match status {
        200 | 201 => {}
        404 => bail!(
            "GitHub does not know this code (a code works once, within an hour): start again at /setup"
        ),
        // GitHub's error bodies say nothing secret; the success body is never shown.
        _ => bail!(
            "GitHub refused to hand over the new App (HTTP {status}): start again at /setup, or check --github-api-url"
        ),
    }
    let wire: WireNewApp = serde_json::from_str(&body)
        .context("GitHub's answer with the new App has an unexpected shape")?;
    let Some(webhook_secret) = wire.webhook_secret.filter(|s| !s.is_empty()) else {
        bail!(
            "GitHub created the App without a webhook secret: set one in the App's settings and start cascade with --github-app-id, --github-private-key-file and --github-webhook-secret-file"
        );
    };
    Ok(NewApp {
        id: wire.id,
        slug: wire.slug,
        html_url: wire.html_url,
        private_key_pem: wire.pem,
        webhook_secret,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// README.md's permission table, as the code defines it.
    fn readme_table() -> String {
        let mut table =
            String::from("| permission | access | what cascade uses it for |\n|---|---|---|\n");
        for p in APP_PERMISSIONS {
            let scope = match p.scope {
                PermissionScope::Repository => "Repository",
                PermissionScope::Organization => "Organization (App created for an organisation)",
            };
            let access = if p.access == "write" {
                "read & write"
            } else {
                "read"
            };
            table.push_str(&format!(
                "| {scope} → **{}** | {access} | {} |\n",
                p.title, p.why
            ));
        }
        table
    }

    #[test]
    fn readme_lists_exactly_the_permissions_and_events_of_the_manifest() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let table = readme_table();
        assert!(
            readme.contains(&table),
            "README.md must carry this permission table (from forge::github::manifest):\n{table}"
        );
        let events = APP_EVENTS
            .iter()
            .map(|e| format!("`{e}`"))
            .collect::<Vec<_>>()
            .join(", ");
        assert!(
            readme.contains(&format!("Events: {events} ")),
            "README.md must list the App's events as `Events: {events} `"
        );
    }

    #[test]
    fn the_manifest_asks_for_organisation_permissions_only_for_an_organisation() {
        let personal = app_manifest("cascade", "https://ci.example.com/cascade", false);
        assert_eq!(
            personal["default_permissions"],
            json!({"checks": "write", "contents": "read", "issues": "write", "merge_queues": "read", "metadata": "read", "pull_requests": "write"})
        );
        assert_eq!(
            personal["hook_attributes"]["url"],
            "https://ci.example.com/cascade/webhooks/github"
        );
        assert_eq!(
            personal["redirect_url"],
            "https://ci.example.com/cascade/setup/callback"
        );
        assert_eq!(personal["public"], false);
        assert_eq!(
            personal["default_events"],
            json!([
                "pull_request",
                "issue_comment",
                "pull_request_review",
                "merge_group"
            ])
        );
        let org = app_manifest(&"x".repeat(100), "https://ci.example.com", true);
        assert_eq!(org["default_permissions"]["members"], "read");
        assert_eq!(org["name"].as_str().unwrap().chars().count(), 34);
    }

    #[test]
    fn only_plain_codes_go_into_the_url() {
        assert!(plausible_code("0a1b2c3d4e5f6a7b8c9d"));
        for bad in ["", "../app", "a/b", "a?b", "a b", "%2e", &"a".repeat(129)] {
            assert!(!plausible_code(bad), "{bad}");
        }
    }
}
