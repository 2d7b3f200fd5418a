//! GitLab's JSON, read into small serde shapes holding only the fields cascade uses (the
//! `gitlab` crate has no response models), and the two endpoints the crate lacks.

use std::borrow::Cow;
use std::time::SystemTime;

use gitlab::api::common::NameOrId;
use gitlab::api::endpoint_prelude::{Endpoint, Method};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub(crate) struct WireUser {
    pub id: u64,
    pub username: String,
    /// The display name; always sent, read as optional all the same.
    #[serde(default)]
    pub name: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireProject {
    pub http_url_to_repo: String,
    /// The project's web page, for links to its files.
    #[serde(default)]
    pub web_url: Option<String>,
    /// `null` while the repository is empty.
    #[serde(default)]
    pub default_branch: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireDiffRefs {
    pub base_sha: Option<String>,
    pub head_sha: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireMergeRequest {
    pub iid: u64,
    pub state: String,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub work_in_progress: bool,
    pub source_branch: String,
    pub target_branch: String,
    pub source_project_id: Option<u64>,
    pub target_project_id: u64,
    pub author: WireUser,
    pub sha: Option<String>,
    pub diff_refs: Option<WireDiffRefs>,
    pub detailed_merge_status: Option<String>,
    /// GitLab before 15.6 has only this coarse word.
    pub merge_status: Option<String>,
    /// The labels' names (the API lists names unless asked `with_labels_details`).
    #[serde(default)]
    pub labels: Vec<String>,
    /// Once merged: the merge commit, or `null` when the merge was a fast-forward
    /// (https://docs.gitlab.com/api/merge_requests/#get-single-mr).
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
    /// Once merged with squash: the squash commit (`null` otherwise).
    #[serde(default)]
    pub squash_commit_sha: Option<String>,
}

impl WireMergeRequest {
    /// The commit the merge put on the target branch: the merge commit, else the squash
    /// commit, else (a fast-forward merge) the head itself.
    pub fn merged_commit(&self) -> Option<String> {
        if self.state != "merged" {
            return None;
        }
        [&self.merge_commit_sha, &self.squash_commit_sha, &self.sha]
            .into_iter()
            .flatten()
            .find(|s| !s.is_empty())
            .cloned()
    }

    /// `detailed_merge_status`, or on GitLab before 15.6 its nearest word from
    /// `merge_status` (which cannot tell why a merge request is blocked).
    pub fn detailed_status(&self) -> String {
        if let Some(detailed) = self
            .detailed_merge_status
            .as_deref()
            .filter(|d| !d.is_empty())
        {
            return detailed.to_string();
        }
        match self.merge_status.as_deref() {
            Some("can_be_merged") => "mergeable",
            Some("cannot_be_merged" | "cannot_be_merged_recheck") => "conflict",
            Some("checking") => "checking",
            _ => "unchecked",
        }
        .to_string()
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireNote {
    pub id: u64,
    pub body: String,
    pub author: WireUser,
    #[serde(default)]
    pub system: bool,
    pub created_at: Option<String>,
}

impl WireNote {
    pub fn created(&self) -> Option<SystemTime> {
        self.created_at
            .as_deref()
            .and_then(crate::forge::parse_timestamp)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireStatus {
    pub id: u64,
    pub status: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireMember {
    pub access_level: u64,
    /// `active`, or `awaiting` for a member a group owner has not let in yet.
    pub state: Option<String>,
}

impl WireMember {
    pub fn active(&self) -> bool {
        self.state.as_deref().is_none_or(|s| s == "active")
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireApprovedBy {
    pub user: WireUser,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireApprovals {
    #[serde(default)]
    pub approved_by: Vec<WireApprovedBy>,
    /// GitLab's own verdict on its approval rules (`approvals_required`, rules, code owners).
    #[serde(default)]
    pub approved: Option<bool>,
    #[serde(default)]
    pub approvals_left: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireProjectApprovals {
    #[serde(default)]
    pub reset_approvals_on_push: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct WireId {
    pub id: u64,
}

/// `DELETE /projects/:id/merge_requests/:iid/notes/:note_id` (not in the crate).
pub(crate) struct DeleteMergeRequestNote {
    pub project: u64,
    pub merge_request: u64,
    pub note: u64,
}

impl Endpoint for DeleteMergeRequestNote {
    fn method(&self) -> Method {
        Method::DELETE
    }

    fn endpoint(&self) -> Cow<'static, str> {
        format!(
            "projects/{}/merge_requests/{}/notes/{}",
            self.project, self.merge_request, self.note
        )
        .into()
    }
}

/// `GET /groups/:id/members/all/:user_id`: a member directly or through an ancestor
/// group (the crate has only the direct `members/:user_id`).
pub(crate) struct AllGroupMember<'a> {
    pub group: NameOrId<'a>,
    pub user: u64,
}

impl Endpoint for AllGroupMember<'_> {
    fn method(&self) -> Method {
        Method::GET
    }

    fn endpoint(&self) -> Cow<'static, str> {
        format!("groups/{}/members/all/{}", self.group, self.user).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_gitlab_s_merge_status_stands_in_for_the_detailed_one() {
        let mr = |detailed: Option<&str>, coarse: Option<&str>| {
            let mut value = serde_json::json!({
                "iid": 1, "state": "opened", "source_branch": "f", "target_branch": "main",
                "source_project_id": 1, "target_project_id": 1,
                "author": { "id": 2, "username": "alice" },
            });
            if let Some(d) = detailed {
                value["detailed_merge_status"] = d.into();
            }
            if let Some(c) = coarse {
                value["merge_status"] = c.into();
            }
            serde_json::from_value::<WireMergeRequest>(value)
                .unwrap()
                .detailed_status()
        };
        assert_eq!(
            mr(Some("ci_must_pass"), Some("can_be_merged")),
            "ci_must_pass"
        );
        assert_eq!(mr(None, Some("can_be_merged")), "mergeable");
        assert_eq!(mr(None, Some("cannot_be_merged")), "conflict");
        assert_eq!(mr(None, None), "unchecked");
    }

    #[test]
    fn group_paths_are_one_segment() {
        let endpoint = AllGroupMember {
            group: NameOrId::from("acme/platform"),
            user: 7,
        };
        assert_eq!(endpoint.endpoint(), "groups/acme%2Fplatform/members/all/7");
    }
}
