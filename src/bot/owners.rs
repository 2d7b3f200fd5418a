//! Whose repositories this server serves (`--allow-owner`, `CASCADE_ALLOW_OWNERS`): a
//! GitHub App made public by hand can be installed by anyone, and a GitLab token may see
//! many groups' projects, so without a list every repository that reaches cascade would
//! be planned with the server's credentials. A change request in a repository of an
//! owner not listed gets one comment saying so and what the operator must do, and
//! nothing else: no fetch, no plan, no check; drift skips such repositories.
//!
//! Owns the list and how a repository key matches it, and when to refuse (`refusal`
//! words it). Never fetches, plans or names the allowed owners to a stranger.

use anyhow::{bail, ensure};

use super::jobs::PrJob;
use super::refusal::Refusal;
use super::{Bot, WorkKey};
use crate::forge::ForgeKind;
use crate::forge::RepoKey;
use crate::store::{BotStore, PrState, PullRequestRecord};

/// The owners whose repositories this server serves; every owner when none is given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedOwners {
    /// `None`: every owner.
    rules: Option<Vec<OwnerRule>>,
}

/// One `--allow-owner` entry: `acme` (a GitHub owner or a GitLab group, on either
/// forge), `github:acme`, or `gitlab:acme/platform` (a group and everything under it).
#[derive(Clone, Debug, PartialEq, Eq)]
struct OwnerRule {
    forge: Option<ForgeKind>,
    /// Lowercase: GitHub logins and GitLab paths are case-insensitive.
    path: String,
}

impl AllowedOwners {
    /// Every owner (no `--allow-owner`).
    pub fn every() -> AllowedOwners {
        AllowedOwners::default()
    }

    /// The list from `--allow-owner` / `CASCADE_ALLOW_OWNERS` (empty: every owner). An
    /// entry that names no owner or group is an error naming it.
    pub fn parse(entries: &[String]) -> anyhow::Result<AllowedOwners> {
        let mut rules = Vec::new();
        for entry in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let (forge, path) = match entry.split_once(':') {
                Some(("github", path)) => (Some(ForgeKind::GitHub), path),
                Some(("gitlab", path)) => (Some(ForgeKind::GitLab), path),
                Some(_) => bail!(
                    "--allow-owner {entry:?}: only `github:` or `gitlab:` may come before a `:`"
                ),
                None => (None, entry),
            };
            let path = path.trim_matches('/');
            ensure!(
                crate::event::gitlab::is_project_path(path),
                "--allow-owner {entry:?} is not an owner: give a GitHub user or organisation \
                 (`acme`), or a GitLab group path (`acme/platform`), optionally after \
                 `github:` or `gitlab:`"
            );
            ensure!(
                !(forge == Some(ForgeKind::GitHub) && path.contains('/')),
                "--allow-owner {entry:?}: a GitHub owner has no `/` (a GitLab group path goes \
                 after `gitlab:`)"
            );
            rules.push(OwnerRule {
                forge,
                path: path.to_ascii_lowercase(),
            });
        }
        Ok(AllowedOwners {
            rules: (!rules.is_empty()).then_some(rules),
        })
    }

    /// Whether a list was given at all.
    pub fn is_restricted(&self) -> bool {
        self.rules.is_some()
    }

    /// Whether the repository with store key `repo` (`owner/name`, or
    /// `gitlab:group/sub/project`) is served here. A GitHub owner matches its login; a
    /// GitLab project matches a group it is in, at any depth (`acme` and
    /// `acme/platform` both serve `acme/platform/infra`).
    pub fn allows(&self, repo: &str) -> bool {
        let Some(rules) = &self.rules else {
            return true;
        };
        let key = RepoKey::from_stored(repo);
        let (forge, owner) = (key.forge(), key.owner().to_ascii_lowercase());
        rules.iter().any(|rule| {
            rule.forge.is_none_or(|f| f == forge)
                && match forge {
                    ForgeKind::GitHub => rule.path == owner,
                    ForgeKind::GitLab => {
                        owner == rule.path
                            || owner
                                .strip_prefix(&rule.path)
                                .is_some_and(|rest| rest.starts_with('/'))
                    }
                }
        })
    }
}

/// What a change request in a repository not served here is told.
fn refusal(repo: &RepoKey) -> Refusal {
    Refusal::NotServed {
        owner: repo.owner().to_string(),
    }
}

/// Whether `job`, of a repository not served here, ends here. A change request's
/// update or command is refused: told once (the comment is remembered as its record's
/// `not_served` state, so later events and commands are quiet). Closing still releases
/// what it held, and a drift job still gives its schedule back (its look skips the
/// repository, [`drift_allowed`]); a comment on an issue is ignored.
pub(super) async fn refused(bot: &Bot, key: &WorkKey, job: &PrJob) -> anyhow::Result<bool> {
    let at = match job {
        PrJob::Update(_) | PrJob::Replan { .. } | PrJob::Comment(_) => job.forge(),
        PrJob::Closed(_) | PrJob::Merged(_) | PrJob::Drift { .. } => return Ok(false),
        PrJob::DriftComment { .. } | PrJob::Reviewed { .. } | PrJob::MergeGroup(_) => {
            return Ok(true);
        }
    };
    tracing::info!(pr = %key, "not served: the repository's owner is not in --allow-owner");
    let existing = bot
        .store
        .pull_request(&key.repo().stored(), key.number())
        .await?;
    if existing
        .as_ref()
        .is_some_and(|r| r.state == PrState::NotServed)
    {
        return Ok(true);
    }
    let forge = bot.forges.open(at).await?;
    let id = forge
        .create_comment(
            &key.repo().stored(),
            key.number(),
            &refusal(key.repo()).message(forge.spelling()),
        )
        .await?;
    let mut record = existing.unwrap_or(PullRequestRecord {
        repo: key.repo().stored(),
        number: key.number(),
        installation_id: at.id(),
        head_sha: String::new(),
        base_sha: String::new(),
        state: PrState::NotServed,
        plan_id: None,
        comment_id: None,
        check_run_id: None,
        updated_at: bot.now(),
    });
    record.state = PrState::NotServed;
    record.comment_id = Some(id);
    record.updated_at = bot.now();
    bot.store.save_pull_request(&record).await?;
    Ok(true)
}

/// Whether drift may look at `repo`.
pub(super) fn drift_allowed(bot: &Bot, repo: &str) -> bool {
    let allowed = bot.owners.allows(repo);
    if !allowed {
        tracing::debug!(repo, "drift skipped: the owner is not in --allow-owner");
    }
    allowed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(entries: &[&str]) -> AllowedOwners {
        AllowedOwners::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn no_list_serves_every_owner() {
        let every = owners(&[]);
        assert!(!every.is_restricted());
        assert!(every.allows("anyone/infra") && every.allows("gitlab:x/y/z"));
        assert_eq!(owners(&[" ", ""]), AllowedOwners::every());
    }

    #[test]
    fn github_owners_match_whole_logins() {
        let list = owners(&["Acme", "github:globex"]);
        assert!(list.allows("acme/infra") && list.allows("ACME/other"));
        assert!(list.allows("globex/infra"));
        for refused in ["acme-evil/infra", "acm/infra", "evil/acme"] {
            assert!(!list.allows(refused), "{refused}");
        }
        // `github:` entries never serve GitLab; plain ones serve a GitLab group too.
        assert!(!list.allows("gitlab:globex/infra"));
        assert!(list.allows("gitlab:acme/infra"));
    }

    #[test]
    fn gitlab_groups_serve_their_subgroups() {
        let list = owners(&["gitlab:acme/platform"]);
        assert!(list.allows("gitlab:acme/platform/infra"));
        assert!(list.allows("gitlab:Acme/Platform/deep/infra"));
        for refused in [
            "gitlab:acme/infra",
            "gitlab:acme/platformx/infra",
            "gitlab:evil/acme/platform/infra",
            "acme/platform",
        ] {
            assert!(!list.allows(refused), "{refused}");
        }
    }

    #[test]
    fn entries_that_name_no_owner_are_refused() {
        for bad in [
            "bitbucket:acme",
            "github:acme/platform",
            "a b",
            "acme/../x",
            ":",
        ] {
            let err = AllowedOwners::parse(&[bad.to_string()]).unwrap_err();
            assert!(err.to_string().contains("--allow-owner"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_refusal_names_the_owner_and_what_to_do() {
        let text =
            refusal(&RepoKey::from_stored("acme-evil/infra")).message(ForgeKind::GitHub.spelling());
        assert!(
            text.contains("`acme-evil`") && text.contains("--allow-owner"),
            "{text}"
        );
        let text = refusal(&RepoKey::from_stored("gitlab:evil/sub/infra"))
            .message(ForgeKind::GitLab.spelling());
        assert!(
            text.contains("`evil/sub`") && text.contains("webhook"),
            "{text}"
        );
    }
}
