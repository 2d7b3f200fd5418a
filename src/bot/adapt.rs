//! Typed webhook events to pull request jobs and installation changes.

use super::jobs::{InstallationChange, PrComment, PrJob, Routed, WorkKey};
use crate::event::gitlab::MergeRequestAction;
use crate::event::{
    Event, InstallationAction, InstallationRepositoriesAction, PullRequestAction, PullRequestEvent,
};
use crate::forge::{Actor, ForgeKind, ForgeRef, PrNumber, PullRequest, RepoKey};

pub fn route(event: Event) -> Routed {
    match event {
        Event::PullRequest(e) => {
            let Some(installation) = e.installation else {
                return Routed::Done;
            };
            let key = github_key(&e.repository.full_name, e.pull_request.number);
            let update = update(&e, installation.0);
            match e.action {
                PullRequestAction::Opened
                | PullRequestAction::Synchronize { .. }
                | PullRequestAction::Reopened
                | PullRequestAction::ReadyForReview
                | PullRequestAction::BaseChanged => Routed::Pr(key, PrJob::Update(update)),
                PullRequestAction::Closed { merged: true } => {
                    Routed::Pr(merges_key(&key), PrJob::Merged(update))
                }
                PullRequestAction::Closed { .. } => Routed::Pr(key, PrJob::Closed(update)),
                PullRequestAction::ConvertedToDraft => Routed::Done,
            }
        }
        Event::PullRequestComment(e) => {
            let Some(installation) = e.installation else {
                return Routed::Done;
            };
            let key = github_key(&e.repository.full_name, e.pull_request.number);
            Routed::Pr(
                key,
                PrJob::Comment(PrComment {
                    forge: ForgeRef::GitHub {
                        installation: installation.0,
                    },
                    comment_id: e.comment.id.0,
                    author: e.comment.author.login.clone(),
                    author_id: None,
                    author_is_bot: e.comment.author.is_bot(),
                    body: e.comment.body.clone(),
                }),
            )
        }
        Event::Installation(e) => {
            let created = e.action == InstallationAction::Created;
            let repos = if created {
                e.repositories.unwrap_or_default()
            } else {
                Vec::new()
            };
            Routed::Installation(InstallationChange {
                id: e.installation.id.0,
                account: e.installation.account.login.clone(),
                active: Some(created),
                added: repos.into_iter().map(|r| r.full_name).collect(),
                removed: Vec::new(),
            })
        }
        Event::InstallationRepositories(e) => {
            let names = |repos: Vec<crate::event::InstalledRepo>| {
                repos.into_iter().map(|r| r.full_name).collect()
            };
            let (added, removed) = match e.action {
                InstallationRepositoriesAction::Added => (names(e.added), Vec::new()),
                InstallationRepositoriesAction::Removed => (Vec::new(), names(e.removed)),
            };
            Routed::Installation(InstallationChange {
                id: e.installation.id.0,
                account: e.installation.account.login.clone(),
                active: None,
                added,
                removed,
            })
        }
        Event::GitLabMergeRequest(e) => {
            let key = gitlab_key(&e.project, e.merge_request.iid);
            let mr = &e.merge_request;
            let update = PullRequest {
                forge: ForgeRef::GitLab {
                    project_id: e.project.id,
                },
                number: PrNumber::new(mr.iid),
                head_sha: mr.head_sha.clone(),
                head_ref: mr.source_branch.clone(),
                // GitLab's hook carries neither the base commit nor the author's name:
                // the job reads the merge request before it plans (`PullRequest::is_partial`).
                base_sha: None,
                base_ref: mr.target_branch.clone(),
                draft: mr.draft,
                fork: mr.fork(),
                author: None,
                open: !e.action.is_closed(),
                mergeable: None,
                // Read with the merge request, like the base commit.
                web_url: None,
                labels: None,
                pusher: matches!(e.action, MergeRequestAction::Pushed { .. }).then(|| Actor {
                    id: e.user.id,
                    login: e.user.username.clone(),
                }),
                // Read from the API by the job that acts on the merge.
                merge_commit: None,
            };
            if e.action == MergeRequestAction::Reviewed {
                Routed::Pr(
                    key,
                    PrJob::Reviewed {
                        forge: update.forge,
                    },
                )
            } else if e.action == MergeRequestAction::Merged {
                Routed::Pr(merges_key(&key), PrJob::Merged(update))
            } else if e.action.is_closed() {
                Routed::Pr(key, PrJob::Closed(update))
            } else {
                // Opened, reopened, new commits, ready: the parser left out the rest.
                Routed::Pr(key, PrJob::Update(update))
            }
        }
        Event::GitLabNote(e) => Routed::Pr(
            gitlab_key(&e.project, e.merge_request.iid),
            PrJob::Comment(PrComment {
                forge: ForgeRef::GitLab {
                    project_id: e.project.id,
                },
                comment_id: e.note.id,
                author: e.user.username.clone(),
                author_id: Some(e.note.author_id),
                // cascade's own notes are told by the token's user id, which the bot's
                // forge knows (`Forge::is_self`); a GitLab username says nothing.
                author_is_bot: false,
                body: e.note.body.clone(),
            }),
        ),
        // A comment on a plain issue: the drift flow acts on its repository's drift
        // issue only (the job compares the number with the stored one).
        Event::IssueComment(e) => {
            let Some(installation) = e.installation else {
                return Routed::Done;
            };
            Routed::Pr(
                WorkKey::Drift {
                    repo: RepoKey::new(ForgeKind::GitHub, &e.repository.full_name),
                },
                PrJob::DriftComment {
                    issue: e.pull_request.number,
                    comment: PrComment {
                        forge: ForgeRef::GitHub {
                            installation: installation.0,
                        },
                        comment_id: e.comment.id.0,
                        author: e.comment.author.login.clone(),
                        author_id: None,
                        author_is_bot: e.comment.author.is_bot(),
                        body: e.comment.body.clone(),
                    },
                },
            )
        }
        Event::GitLabIssueNote(e) => Routed::Pr(
            WorkKey::Drift {
                repo: RepoKey::from_stored(&e.project.repo_key()),
            },
            PrJob::DriftComment {
                issue: e.issue.iid,
                comment: PrComment {
                    forge: ForgeRef::GitLab {
                        project_id: e.project.id,
                    },
                    comment_id: e.note.id,
                    author: e.user.username.clone(),
                    author_id: Some(e.note.author_id),
                    author_is_bot: false,
                    body: e.note.body.clone(),
                },
            },
        ),
        Event::PullRequestReview(e) => {
            let Some(installation) = e.installation else {
                return Routed::Done;
            };
            Routed::Pr(
                github_key(&e.repository.full_name, e.number),
                PrJob::Reviewed {
                    forge: ForgeRef::GitHub {
                        installation: installation.0,
                    },
                },
            )
        }
        Event::MergeGroup(e) => {
            let Some(installation) = e.installation else {
                return Routed::Done;
            };
            let entering = e.entering();
            Routed::Pr(
                WorkKey::Drift {
                    repo: RepoKey::new(ForgeKind::GitHub, &e.repository.full_name),
                },
                PrJob::MergeGroup(super::merge_group::QueuedGroup {
                    forge: ForgeRef::GitHub {
                        installation: installation.0,
                    },
                    head_sha: e.head_sha,
                    head_ref: e.head_ref,
                    base_sha: e.base_sha,
                    entering,
                }),
            )
        }
        Event::Ping { .. } | Event::Ignored { .. } => Routed::Done,
    }
}

/// Where a merged pull request goes: its repository's own actor (the one drift work
/// runs on), so the merges of one repository are handled one at a time, in the order
/// their events came, and an apply after merge never runs beside another.
fn merges_key(key: &WorkKey) -> WorkKey {
    WorkKey::Drift {
        repo: key.repo().clone(),
    }
}

/// A GitHub pull request's key.
fn github_key(full_name: &str, number: u64) -> WorkKey {
    WorkKey::PullRequest {
        repo: RepoKey::new(ForgeKind::GitHub, full_name),
        number: PrNumber::new(number),
    }
}

/// A GitLab merge request's key (the store's text for the project: `gitlab:<path>`).
fn gitlab_key(project: &crate::event::gitlab::GitLabProject, iid: u64) -> WorkKey {
    WorkKey::PullRequest {
        repo: RepoKey::from_stored(&project.repo_key()),
        number: PrNumber::new(iid),
    }
}

fn update(e: &PullRequestEvent, installation: u64) -> PullRequest {
    let pr = &e.pull_request;
    PullRequest {
        forge: ForgeRef::GitHub { installation },
        number: PrNumber::new(pr.number),
        head_sha: pr.head.sha.clone(),
        head_ref: pr.head.ref_name.clone(),
        base_sha: Some(pr.base.sha.clone()),
        base_ref: pr.base.ref_name.clone(),
        draft: pr.draft,
        fork: pr.head.fork,
        author: Some(pr.author.login.clone()),
        open: !matches!(e.action, PullRequestAction::Closed { .. }),
        mergeable: None,
        web_url: e.repository.html_url.clone(),
        labels: None,
        merge_commit: None,
        // The sender of these is who pushed (a reopen counts: the branch may have moved
        // while the pull request was closed, and cascade saw no push of it).
        pusher: matches!(
            e.action,
            PullRequestAction::Opened
                | PullRequestAction::Synchronize { .. }
                | PullRequestAction::Reopened
        )
        .then(|| Actor {
            id: None,
            login: e.sender.login.clone(),
        }),
    }
}
