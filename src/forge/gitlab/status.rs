//! cascade's check as a GitLab commit status, and "mergeable" without it: the wire
//! mapping and the rules GitLab's status transitions and merge checks impose. Pure
//! functions; the client in `mod.rs` does the requests.
//!
//! A reviewer reads red as "something broke", so a plan waiting for `cascade apply` is
//! `running` with the description saying so, never `failed`; `failed` is for something
//! that failed, `success` for nothing waiting. Planning is `pending`. This is Atlantis's
//! choice on GitLab too.
//!
//! GitLab finds a pending or running status with the same name, sha and ref and fires
//! a transition on it, else creates one
//! (https://docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit). It
//! refuses `pending → pending`, `running → pending` and `running → running` with a 400
//! "Cannot transition status via …" (the description is not saved either), and accepts
//! everything from a finished status (a new one). So [`steps`] sends nothing when ours is
//! already where it should be, and a running status whose description must change is
//! `canceled` first (a finished state, not red) and then `running` anew.

use std::collections::BTreeMap;

use gitlab::api::projects::repository::commits::CommitStatusState;

use super::wire::WireStatus;
use crate::forge::types::{CheckStatus, Mergeable};

/// The name of cascade's commit status.
pub const STATUS_NAME: &str = "cascade";

/// GitLab's cap on a status description, in bytes.
pub const DESCRIPTION_LIMIT: usize = 255;

/// What GitLab answers when a transition is refused (400).
pub const TRANSITION_REFUSED: &str = "Cannot transition status";

/// The state cascade posts for `status`: planning is `pending`; waiting for a person (a
/// `cascade apply`, a lock) is `running`, which blocks "pipelines must succeed" as a
/// required GitHub check asking for action does, without reading as a failure.
pub fn wire_state(status: CheckStatus) -> CommitStatusState {
    match status {
        CheckStatus::InProgress => CommitStatusState::Pending,
        CheckStatus::ActionRequired => CommitStatusState::Running,
        CheckStatus::Success => CommitStatusState::Success,
        CheckStatus::Failure => CommitStatusState::Failed,
    }
}

/// The states to send, in order, to bring ours (`current`: its state and description,
/// when it has one) to `wanted` with `description`, within GitLab's transitions: none
/// when it is there already (pending or running is "in progress" enough while a plan
/// is made again), `canceled` then `running` to change a running status's description.
pub fn steps(
    wanted: CommitStatusState,
    description: &str,
    current: Option<(&str, Option<&str>)>,
) -> Vec<CommitStatusState> {
    let (state, said) = current.unwrap_or(("", None));
    match (state_word(wanted), state) {
        ("pending", "pending" | "running") => Vec::new(),
        ("running", "running") if said == Some(description) => Vec::new(),
        ("running", "running") => vec![CommitStatusState::Canceled, CommitStatusState::Running],
        _ => vec![wanted],
    }
}

/// The word GitLab uses for `state` in its answers.
pub fn state_word(state: CommitStatusState) -> &'static str {
    match state {
        CommitStatusState::Pending => "pending",
        CommitStatusState::Running => "running",
        CommitStatusState::Success => "success",
        CommitStatusState::Failed => "failed",
        CommitStatusState::Canceled => "canceled",
        _ => "skipped",
    }
}

/// The newest status of each name (GitLab's ids grow).
pub fn latest_per_name(statuses: Vec<WireStatus>) -> BTreeMap<String, WireStatus> {
    let mut latest: BTreeMap<String, WireStatus> = BTreeMap::new();
    for status in statuses {
        match latest.get(&status.name) {
            Some(seen) if seen.id > status.id => {}
            _ => {
                latest.insert(status.name.clone(), status);
            }
        }
    }
    latest
}

/// Whether the merge status can only be read with the head's statuses: GitLab blocks on
/// the pipeline, which cascade's own status is part of.
pub fn waits_on_pipeline(detailed_merge_status: &str) -> bool {
    matches!(detailed_merge_status, "ci_must_pass" | "ci_still_running")
}

/// Mergeable leaving cascade's own status out. `others` are the head's statuses (any
/// number per name); only the latest of each name other than [`STATUS_NAME`] counts.
pub fn mergeable(detailed_merge_status: &str, others: Vec<WireStatus>) -> Mergeable {
    let state = detailed_merge_status.to_string();
    match detailed_merge_status {
        "mergeable" => Mergeable::Yes,
        "checking" | "unchecked" | "preparing" | "" => Mergeable::Unknown { state },
        waiting if waits_on_pipeline(waiting) => {
            let green = latest_per_name(others)
                .values()
                .filter(|s| s.name != STATUS_NAME)
                .all(|s| matches!(s.status.as_str(), "success" | "skipped" | "manual"));
            if green {
                Mergeable::Yes
            } else {
                Mergeable::No { state }
            }
        }
        _ => Mergeable::No { state },
    }
}

/// `text` cut to at most [`DESCRIPTION_LIMIT`] bytes on a character boundary.
pub fn description(text: &str) -> &str {
    if text.len() <= DESCRIPTION_LIMIT {
        return text;
    }
    let mut end = DESCRIPTION_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(id: u64, name: &str, state: &str) -> WireStatus {
        WireStatus {
            id,
            status: state.to_string(),
            name: name.to_string(),
            description: None,
        }
    }

    #[test]
    fn cascade_s_own_status_never_blocks() {
        let own_failed = vec![status(1, STATUS_NAME, "failed")];
        assert_eq!(
            mergeable("ci_must_pass", own_failed.clone()),
            Mergeable::Yes
        );
        assert_eq!(mergeable("ci_still_running", own_failed), Mergeable::Yes);
        let other_failed = vec![
            status(1, STATUS_NAME, "running"),
            status(2, "lint", "failed"),
        ];
        assert_eq!(
            mergeable("ci_must_pass", other_failed),
            Mergeable::No {
                state: "ci_must_pass".into()
            }
        );
        // A retried job counts by its newest run.
        let retried = vec![status(3, "lint", "failed"), status(4, "lint", "success")];
        assert_eq!(mergeable("ci_still_running", retried), Mergeable::Yes);
        let manual = vec![status(5, "deploy", "manual"), status(6, "docs", "skipped")];
        assert_eq!(mergeable("ci_must_pass", manual), Mergeable::Yes);
    }

    #[test]
    fn merge_statuses_map() {
        assert_eq!(mergeable("mergeable", vec![]), Mergeable::Yes);
        for waiting in ["checking", "unchecked", "preparing"] {
            assert!(matches!(
                mergeable(waiting, vec![]),
                Mergeable::Unknown { .. }
            ));
        }
        for blocked in [
            "conflict",
            "not_approved",
            "draft_status",
            "discussions_not_resolved",
        ] {
            assert!(matches!(mergeable(blocked, vec![]), Mergeable::No { .. }));
        }
    }

    #[test]
    fn waiting_is_running_and_only_a_failure_is_red() {
        use CommitStatusState::*;
        assert_eq!(wire_state(CheckStatus::InProgress), Pending);
        assert_eq!(wire_state(CheckStatus::ActionRequired), Running);
        assert_eq!(wire_state(CheckStatus::Success), Success);
        assert_eq!(wire_state(CheckStatus::Failure), Failed);
    }

    #[test]
    fn steps_stay_within_gitlabs_transitions() {
        use CommitStatusState::*;
        let waits = "cascade: comment cascade apply 1 to apply";
        // Fresh, or after a finished status: one write.
        assert_eq!(steps(Pending, "planning", None), [Pending]);
        assert_eq!(
            steps(Pending, "planning", Some(("success", None))),
            [Pending]
        );
        // Planning again while in progress or waiting: nothing (GitLab refuses both).
        assert!(steps(Pending, "planning", Some(("pending", None))).is_empty());
        assert!(steps(Pending, "planning", Some(("running", Some(waits)))).is_empty());
        // Waiting after planning: pending → running.
        assert_eq!(steps(Running, waits, Some(("pending", None))), [Running]);
        // Waiting again with the same words: nothing; with new words: restarted.
        assert!(steps(Running, waits, Some(("running", Some(waits)))).is_empty());
        assert_eq!(
            steps(
                Running,
                "cascade: comment cascade apply 2 to apply",
                Some(("running", Some(waits)))
            ),
            [Canceled, Running]
        );
        // Finishing is always one write.
        for from in [
            None,
            Some(("pending", None)),
            Some(("running", Some(waits))),
        ] {
            assert_eq!(steps(Success, "done", from), [Success]);
            assert_eq!(steps(Failed, "broke", from), [Failed]);
        }
    }

    #[test]
    fn descriptions_fit_gitlab_s_limit() {
        let long = "é".repeat(200);
        let cut = description(&long);
        assert!(cut.len() <= DESCRIPTION_LIMIT && cut.chars().all(|c| c == 'é'));
        assert_eq!(description("short"), "short");
    }
}
