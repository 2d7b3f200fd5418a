//! Webhook deliveries: signatures (GitHub's documented vector, every row of
//! `SIGNATURES.tsv`, rotation and every way a header can be wrong) and every
//! real payload in `../shared/webhooks/github/` parsed into its typed event;
//! GitLab's token, Standard-Webhooks signature, delivery ids, and every payload
//! in `../shared/webhooks/gitlab/` parsed and classified as its README says.

use crate::support;
use secrecy::SecretSlice;

use cascade::event::gitlab::{
    GitLabDelivery, MergeRequestAction, SigningError, SigningKey, TokenError, verify_signing,
    verify_token,
};
use cascade::event::{
    AccountKind, Event, InstallationAction, InstallationRepositoriesAction, ParseError,
    PullRequestAction, SignatureError, parse_event, parse_gitlab_event, verify_signature,
};
use serde_json::Value;
use std::path::PathBuf;

const DOCS_SECRET: &str = "It's a Secret to Everybody";
const DOCS_SIGNATURE: &str =
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

fn github_dir() -> PathBuf {
    let dir = support::shared().join("webhooks/github");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

fn payload(file: &str) -> Vec<u8> {
    let path = github_dir().join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The event name is the file name up to its first dot (`pull_request.opened.json`).
fn event_of(file: &str) -> &str {
    file.split('.').next().unwrap()
}

fn parse_file(file: &str) -> Event {
    parse_event(event_of(file), &payload(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Every `*.json` in the payload directory, sorted.
fn payload_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(github_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    files
}

fn secrets(list: &[&str]) -> Vec<SecretSlice<u8>> {
    list.iter().map(|s| s.as_bytes().to_vec().into()).collect()
}

// ---------------------------------------------------------------- signatures

#[test]
fn github_docs_test_vector() {
    assert_eq!(
        verify_signature(
            &secrets(&[DOCS_SECRET]),
            Some(DOCS_SIGNATURE),
            b"Hello, World!"
        ),
        Ok(())
    );
}

#[test]
fn every_row_of_signatures_tsv_verifies() {
    let table = std::fs::read_to_string(github_dir().join("SIGNATURES.tsv")).unwrap();
    let mut files = Vec::new();
    for line in table.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split('\t').collect();
        let [file, bytes, signature] = cols[..] else {
            panic!("SIGNATURES.tsv row {line:?} has {} columns", cols.len());
        };
        let body = payload(file);
        assert_eq!(body.len().to_string(), bytes, "{file} is not byte-exact");
        assert_eq!(
            verify_signature(&secrets(&[DOCS_SECRET]), Some(signature), &body),
            Ok(()),
            "{file}"
        );
        assert_eq!(
            verify_signature(&secrets(&["topsecret"]), Some(signature), &body),
            Err(SignatureError::Mismatch),
            "{file} under another secret"
        );
        files.push(file.to_owned());
    }
    files.sort();
    assert_eq!(
        files,
        payload_files(),
        "SIGNATURES.tsv must list every payload file"
    );
}

#[test]
fn go_scm_vector_over_a_whole_file() {
    let body = payload("push.signed-topsecret.json");
    let key = secrets(&["topsecret"]);
    let valid = "sha256=e3bfe744d4e2e29ed990bde8acfb8255ca51ef65f99657767989fb6349f32957";
    let invalid = "sha256=3bfbbc3bfc44498db2254f577b2e4bed201ece6163518ba91cb2c21f0f59d512";
    assert_eq!(verify_signature(&key, Some(valid), &body), Ok(()));
    assert_eq!(
        verify_signature(&key, Some(invalid), &body),
        Err(SignatureError::Mismatch)
    );
    // The trailing newline is part of what was signed.
    assert_eq!(
        verify_signature(&key, Some(valid), body.strip_suffix(b"\n").unwrap()),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn wrong_secret_is_rejected() {
    assert_eq!(
        verify_signature(
            &secrets(&["It's a secret to everybody"]),
            Some(DOCS_SIGNATURE),
            b"Hello, World!"
        ),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn tampered_body_is_rejected() {
    let key = secrets(&[DOCS_SECRET]);
    for body in [
        &b"Hello, World?"[..],
        b"Hello, World!\n",
        b"hello, World!",
        b"",
    ] {
        assert_eq!(
            verify_signature(&key, Some(DOCS_SIGNATURE), body),
            Err(SignatureError::Mismatch),
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn truncated_uppercase_or_missing_header_is_rejected() {
    let key = secrets(&[DOCS_SECRET]);
    let body = b"Hello, World!";
    let truncated = &DOCS_SIGNATURE[..DOCS_SIGNATURE.len() - 1];
    let upper_hex = format!(
        "sha256={}",
        DOCS_SIGNATURE["sha256=".len()..].to_uppercase()
    );
    let upper_prefix = DOCS_SIGNATURE.replace("sha256=", "SHA256=");
    let legacy = "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6";
    for header in [
        truncated,
        upper_hex.as_str(),
        upper_prefix.as_str(),
        legacy,
        "sha256=",
    ] {
        assert!(
            matches!(
                verify_signature(&key, Some(header), body),
                Err(SignatureError::Malformed(_))
            ),
            "{header:?} must be rejected as malformed"
        );
    }
    assert_eq!(
        verify_signature(&key, None, body),
        Err(SignatureError::Missing)
    );
}

#[test]
fn either_of_two_secrets_verifies_during_rotation() {
    let body = b"Hello, World!";
    let old_first = secrets(&["the-old-secret", DOCS_SECRET]);
    assert_eq!(
        verify_signature(&old_first, Some(DOCS_SIGNATURE), body),
        Ok(())
    );
    let new_first = secrets(&[DOCS_SECRET, "the-old-secret"]);
    assert_eq!(
        verify_signature(&new_first, Some(DOCS_SIGNATURE), body),
        Ok(())
    );
    let neither = secrets(&["the-old-secret", "the-next-secret"]);
    assert_eq!(
        verify_signature(&neither, Some(DOCS_SIGNATURE), body),
        Err(SignatureError::Mismatch)
    );
    assert_eq!(
        verify_signature(&[], Some(DOCS_SIGNATURE), body),
        Err(SignatureError::NoSecret)
    );
}

#[test]
fn signature_errors_never_show_the_secret_or_the_header() {
    let key = secrets(&[DOCS_SECRET]);
    let body = b"Hello, World!";
    let wrong = DOCS_SIGNATURE.replace("757107", "757108");
    let errors = [
        verify_signature(&key, None, body),
        verify_signature(&key, Some("sha256=zz"), body),
        verify_signature(&key, Some(&wrong), body),
        verify_signature(&[], Some(DOCS_SIGNATURE), body),
    ];
    for error in errors {
        let message = error.unwrap_err().to_string();
        assert!(
            !message.contains(DOCS_SECRET) && !message.contains("757108"),
            "{message}"
        );
    }
}

// ---------------------------------------------------------------- payloads

/// A one-line name for what a payload became.
fn kind(event: &Event) -> String {
    match event {
        Event::PullRequest(pr) => match &pr.action {
            PullRequestAction::Synchronize { .. } => "pull_request synchronize".into(),
            PullRequestAction::Closed { merged } => format!("pull_request closed merged={merged}"),
            action => format!("pull_request {action:?}"),
        },
        Event::PullRequestComment(_) => "pull_request_comment".into(),
        Event::IssueComment(_) => "issue_comment".into(),
        Event::Installation(i) => format!("installation {:?}", i.action),
        Event::InstallationRepositories(i) => format!("installation_repositories {:?}", i.action),
        Event::Ping { .. } => "ping".into(),
        Event::GitLabMergeRequest(mr) => match &mr.action {
            MergeRequestAction::Pushed { .. } => "gitlab merge_request NewHead pushed".into(),
            action if action.is_new_head() && *action != MergeRequestAction::Ready => {
                format!("gitlab merge_request NewHead {action:?}")
            }
            action if action.is_closed() => format!("gitlab merge_request Closed {action:?}"),
            action => format!("gitlab merge_request {action:?}"),
        },
        Event::GitLabNote(_) => "gitlab note Comment".into(),
        Event::GitLabIssueNote(_) => "gitlab note IssueComment".into(),
        Event::PullRequestReview(r) => format!("pull_request_review #{}", r.number),
        Event::MergeGroup(g) => format!("merge_group entering={:?}", g.entering()),
        Event::Ignored { event, action } => format!("ignored {event} {action:?}"),
    }
}

/// Every payload file and what it must parse into.
const EXPECTED: &[(&str, &str)] = &[
    (
        "check_run.requested_action.json",
        r#"ignored check_run Some("requested_action")"#,
    ),
    (
        "check_run.rerequested.json",
        r#"ignored check_run Some("rerequested")"#,
    ),
    (
        "check_suite.requested.json",
        r#"ignored check_suite Some("requested")"#,
    ),
    (
        "check_suite.rerequested.json",
        r#"ignored check_suite Some("rerequested")"#,
    ),
    ("installation.created.json", "installation Created"),
    ("installation.deleted.2.json", "installation Deleted"),
    ("installation.deleted.json", "installation Deleted"),
    (
        "installation_repositories.added.json",
        "installation_repositories Added",
    ),
    (
        "installation_repositories.removed.2.json",
        "installation_repositories Removed",
    ),
    (
        "installation_repositories.removed.json",
        "installation_repositories Removed",
    ),
    // A new comment on a plain issue (the drift issue's `/apply <id>`).
    ("issue_comment.created.json", "issue_comment"),
    (
        "issue_comment.created.on-pull-request.json",
        "pull_request_comment",
    ),
    (
        "issue_comment.deleted.json",
        r#"ignored issue_comment Some("deleted")"#,
    ),
    (
        "issue_comment.deleted.on-pull-request.json",
        r#"ignored issue_comment Some("deleted")"#,
    ),
    (
        "issue_comment.edited.json",
        r#"ignored issue_comment Some("edited")"#,
    ),
    (
        "issue_comment.edited.on-pull-request.json",
        r#"ignored issue_comment Some("edited")"#,
    ),
    ("ping.app.json", "ping"),
    ("ping.json", "ping"),
    (
        "pull_request.closed.merged-false.json",
        "pull_request closed merged=false",
    ),
    (
        "pull_request.closed.merged-true.json",
        "pull_request closed merged=true",
    ),
    (
        "pull_request.converted_to_draft.json",
        "pull_request ConvertedToDraft",
    ),
    (
        "pull_request.edited.json",
        r#"ignored pull_request Some("edited")"#,
    ),
    ("pull_request.opened.json", "pull_request Opened"),
    (
        "pull_request.ready_for_review.2.json",
        "pull_request ReadyForReview",
    ),
    (
        "pull_request.ready_for_review.json",
        "pull_request ReadyForReview",
    ),
    ("pull_request.reopened.json", "pull_request Reopened"),
    ("pull_request.synchronize.json", "pull_request synchronize"),
    (
        "pull_request_review.submitted.2.json",
        "pull_request_review #205",
    ),
    (
        "pull_request_review.submitted.json",
        "pull_request_review #2",
    ),
    ("push.2.json", "ignored push None"),
    ("push.json", "ignored push None"),
    ("push.signed-topsecret.json", "ignored push None"),
];

#[test]
fn every_payload_file_parses_into_its_expected_event() {
    let mut on_disk: Vec<String> = std::fs::read_dir(github_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = EXPECTED.iter().map(|(file, _)| *file).collect();
    assert_eq!(
        on_disk, listed,
        "a payload file was added or removed: update EXPECTED"
    );
    let mut failures = Vec::new();
    for (file, expected) in EXPECTED {
        let got = kind(&parse_file(file));
        if got != *expected {
            failures.push(format!("{file}: expected {expected}, got {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

macro_rules! snapshot_payload {
    ($test:ident, $file:literal) => {
        #[test]
        fn $test() {
            insta::assert_debug_snapshot!(parse_file($file));
        }
    };
}

snapshot_payload!(pull_request_opened, "pull_request.opened.json");
snapshot_payload!(pull_request_synchronize, "pull_request.synchronize.json");
snapshot_payload!(
    pull_request_closed_merged,
    "pull_request.closed.merged-true.json"
);
snapshot_payload!(
    pull_request_closed_unmerged,
    "pull_request.closed.merged-false.json"
);
snapshot_payload!(
    comment_created_on_pull_request,
    "issue_comment.created.on-pull-request.json"
);
snapshot_payload!(comment_created_on_issue, "issue_comment.created.json");
snapshot_payload!(installation_created, "installation.created.json");
snapshot_payload!(installation_deleted, "installation.deleted.2.json");
snapshot_payload!(
    installation_repositories_added,
    "installation_repositories.added.json"
);
snapshot_payload!(
    installation_repositories_removed,
    "installation_repositories.removed.json"
);
snapshot_payload!(ping_app, "ping.app.json");

#[test]
fn merged_pull_request_from_a_fork_is_a_fork() {
    let Event::PullRequest(pr) = parse_file("pull_request.closed.merged-true.json") else {
        panic!("not a pull request event");
    };
    assert!(pr.pull_request.head.fork);
    assert!(pr.pull_request.merged);
    assert_eq!(
        pr.installation, None,
        "a repository hook's delivery has no installation"
    );
}

#[test]
fn head_repository_that_is_itself_a_fork_is_not_a_fork_pull_request() {
    // drone-test-go is a fork of something else, but head and base are the same repository.
    let mut body: Value = serde_json::from_slice(&payload("pull_request.edited.json")).unwrap();
    assert_eq!(body["pull_request"]["head"]["repo"]["fork"], true);
    body["action"] = "opened".into();
    let Ok(Event::PullRequest(pr)) =
        parse_event("pull_request", &serde_json::to_vec(&body).unwrap())
    else {
        panic!("not a pull request event");
    };
    assert!(!pr.pull_request.head.fork);
    assert!(
        !pr.pull_request.draft,
        "payloads from before drafts existed have no `draft`"
    );
}

#[test]
fn comment_from_a_bot_keeps_its_kind() {
    let mut body: Value =
        serde_json::from_slice(&payload("issue_comment.edited.on-pull-request.json")).unwrap();
    body["action"] = "created".into();
    let Ok(Event::PullRequestComment(c)) =
        parse_event("issue_comment", &serde_json::to_vec(&body).unwrap())
    else {
        panic!("not a comment event");
    };
    assert_eq!(c.comment.author.login, "gagbo-test-app[bot]");
    assert_eq!(c.comment.author.kind, AccountKind::Bot);
    assert_eq!(c.pull_request.number, 5);
}

#[test]
fn a_comment_on_a_plain_issue_carries_what_the_drift_flow_needs() {
    let Event::IssueComment(c) = parse_file("issue_comment.created.json") else {
        panic!("not an issue comment event");
    };
    let raw: Value = serde_json::from_slice(&payload("issue_comment.created.json")).unwrap();
    assert_eq!(
        c.pull_request.number,
        raw["issue"]["number"].as_u64().unwrap()
    );
    assert_eq!(c.comment.id.0, raw["comment"]["id"].as_u64().unwrap());
    assert_eq!(c.comment.body, raw["comment"]["body"].as_str().unwrap());
    assert_eq!(
        c.comment.author.login,
        raw["comment"]["user"]["login"].as_str().unwrap()
    );
    assert_eq!(
        c.repository.full_name,
        raw["repository"]["full_name"].as_str().unwrap()
    );
    assert_eq!(c.installation.map(|i| i.0), Some(1));
    // `pull_request: null` is a plain issue too; a body without what a comment needs is
    // not GitHub's shape, plain issue or not.
    let mut body = raw.clone();
    body["issue"]["pull_request"] = Value::Null;
    assert!(matches!(
        parse_event("issue_comment", &serde_json::to_vec(&body).unwrap()),
        Ok(Event::IssueComment(_))
    ));
    remove(&mut body, "comment.body");
    assert!(matches!(
        parse_event("issue_comment", &serde_json::to_vec(&body).unwrap()),
        Err(ParseError::Shape { path, .. }) if path == "comment.body"
    ));
}

#[test]
fn installation_events_carry_their_repositories() {
    let Event::Installation(i) = parse_file("installation.deleted.2.json") else {
        panic!("not an installation event");
    };
    assert_eq!(i.action, InstallationAction::Deleted);
    assert_eq!(i.repositories.map(|r| r.len()), Some(3));
    let Event::InstallationRepositories(r) = parse_file("installation_repositories.removed.2.json")
    else {
        panic!("not an installation_repositories event");
    };
    assert_eq!(r.action, InstallationRepositoriesAction::Removed);
    assert!(r.added.is_empty());
    assert_eq!(r.removed.len(), 1);
}

// ---------------------------------------------------------------- bad bodies

#[test]
fn malformed_json_is_an_error() {
    let body = payload("pull_request.opened.json");
    for broken in [
        &body[..body.len() / 2],
        b"",
        b"not json",
        b"{\"action\": \"opened\",}",
    ] {
        for event in ["pull_request", "push"] {
            assert!(
                matches!(parse_event(event, broken), Err(ParseError::Malformed(_))),
                "{event} {:?}",
                String::from_utf8_lossy(&broken[..broken.len().min(40)])
            );
        }
    }
}

/// Removes the member at `path` (dot-separated) from `value`.
fn remove(value: &mut Value, path: &str) {
    let (parent, last) = match path.rsplit_once('.') {
        Some((parent, last)) => (parent.split('.').fold(value, |v, k| &mut v[k]), last),
        None => (value, path),
    };
    assert!(
        parent.as_object_mut().unwrap().remove(last).is_some(),
        "{path} not in the payload"
    );
}

fn error_for(file: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut body: Value = serde_json::from_slice(&payload(file)).unwrap();
    edit(&mut body);
    // Pretty-printed, so positions span many lines.
    let bytes = serde_json::to_vec_pretty(&body).unwrap();
    match parse_event(event_of(file), &bytes) {
        Err(e @ ParseError::Shape { .. }) => e.to_string(),
        other => panic!("{file}: expected a shape error, got {other:?}"),
    }
}

#[test]
fn a_missing_required_field_is_named_by_its_path() {
    let cases = [
        ("pull_request.opened.json", "pull_request.head.sha"),
        ("pull_request.opened.json", "pull_request.base.ref"),
        ("pull_request.opened.json", "pull_request.user.login"),
        ("pull_request.opened.json", "pull_request.number"),
        ("pull_request.synchronize.json", "repository.default_branch"),
        ("pull_request.closed.merged-true.json", "repository.owner"),
        ("pull_request.reopened.json", "sender"),
        ("issue_comment.created.on-pull-request.json", "comment.body"),
        (
            "issue_comment.created.on-pull-request.json",
            "comment.user.type",
        ),
        ("installation.created.json", "installation.account.login"),
        (
            "installation_repositories.added.json",
            "repositories_removed",
        ),
        ("ping.json", "zen"),
    ];
    for (file, path) in cases {
        let field = path.rsplit('.').next().unwrap();
        assert_eq!(
            error_for(file, |body| remove(body, path)),
            format!(
                "`{}` payload: {path}: missing field `{field}`",
                event_of(file)
            ),
            "{file} without {path}"
        );
    }
}

#[test]
fn a_field_of_the_wrong_type_is_named_by_its_path() {
    let msg = error_for("pull_request.opened.json", |b| {
        b["pull_request"]["number"] = "2".into()
    });
    assert_eq!(
        msg,
        r#"`pull_request` payload: pull_request.number: invalid type: string "2", expected u64"#
    );
    let msg = error_for("pull_request.opened.json", |b| {
        b["pull_request"]["head"]["sha"] = "refs/heads/changes".into()
    });
    assert_eq!(
        msg,
        "`pull_request` payload: pull_request.head.sha: not a commit SHA (40 or 64 lowercase hex digits)"
    );
    let msg = error_for("installation.created.json", |b| {
        b["repositories"][0]["id"] = Value::Null
    });
    assert_eq!(
        msg,
        "`installation` payload: repositories[0].id: invalid type: null, expected u64"
    );
    let msg = error_for("pull_request.opened.json", |b| {
        b["pull_request"]["state"] = "merged".into()
    });
    assert!(
        msg.starts_with("`pull_request` payload: pull_request.state: unknown variant `merged`"),
        "{msg}"
    );
}

#[test]
fn a_long_rejected_value_is_not_quoted_whole() {
    let long = "9".repeat(100_000);
    let msg = error_for("pull_request.opened.json", |b| {
        b["pull_request"]["number"] = long.clone().into()
    });
    assert!(
        msg.starts_with("`pull_request` payload: pull_request.number: invalid type: string \"999"),
        "{msg}"
    );
    assert!(
        msg.chars().count() < 700,
        "{} characters",
        msg.chars().count()
    );
    let gitlab = gitlab_edited("note.merge_request.json", |b| {
        b["object_attributes"]["id"] = long.clone().into()
    })
    .unwrap_err()
    .to_string();
    assert!(gitlab.contains("object_attributes.id"), "{gitlab}");
    assert!(
        gitlab.chars().count() < 700,
        "{} characters",
        gitlab.chars().count()
    );
}

#[test]
fn an_ignored_action_is_not_held_to_the_handled_shape() {
    let mut body: Value = serde_json::from_slice(&payload("pull_request.opened.json")).unwrap();
    body["action"] = "labeled".into();
    remove(&mut body, "pull_request.head.sha");
    assert_eq!(
        parse_event("pull_request", &serde_json::to_vec(&body).unwrap()),
        Ok(Event::Ignored {
            event: "pull_request".into(),
            action: Some("labeled".into())
        })
    );
}

// ---------------------------------------------------------------- GitLab

fn gitlab_dir() -> PathBuf {
    let dir = support::shared().join("webhooks/gitlab");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

fn gitlab_payload(file: &str) -> Vec<u8> {
    let path = gitlab_dir().join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `X-Gitlab-Event` of each file, from `SOURCES.tsv` (its last column).
fn gitlab_hook_of(file: &str) -> String {
    let table = std::fs::read_to_string(gitlab_dir().join("SOURCES.tsv")).unwrap();
    table
        .lines()
        .skip(1)
        .find_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            (cols.first() == Some(&file)).then(|| cols.last().unwrap().to_string())
        })
        .unwrap_or_else(|| panic!("SOURCES.tsv does not list {file}"))
}

fn parse_gitlab_file(file: &str) -> Event {
    parse_gitlab_event(&gitlab_hook_of(file), &gitlab_payload(file))
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Every GitLab payload file and what the bot must route it as.
const GITLAB_EXPECTED: &[(&str, &str)] = &[
    (
        "merge_request.close.json",
        "gitlab merge_request Closed Closed",
    ),
    (
        "merge_request.merge.json",
        "gitlab merge_request Closed Merged",
    ),
    (
        "merge_request.open.json",
        "gitlab merge_request NewHead Opened",
    ),
    (
        "merge_request.reopen.json",
        "gitlab merge_request NewHead Reopened",
    ),
    // Older GitLab: only the title loses its `Draft:` prefix.
    (
        "merge_request.update.mark-as-ready.2.json",
        "gitlab merge_request Ready",
    ),
    // Named "mark as ready", but `changes.draft` goes false → true: ready → draft.
    (
        "merge_request.update.mark-as-ready.json",
        r#"ignored gitlab:Merge Request Hook Some("update")"#,
    ),
    (
        "merge_request.update.new-commit.json",
        "gitlab merge_request NewHead pushed",
    ),
    (
        "merge_request.update.target-branch.json",
        r#"ignored gitlab:Merge Request Hook Some("update")"#,
    ),
    (
        "merge_request.update.title.json",
        r#"ignored gitlab:Merge Request Hook Some("update")"#,
    ),
    ("note.merge_request.2.json", "gitlab note Comment"),
    ("note.merge_request.json", "gitlab note Comment"),
];

#[test]
fn every_gitlab_payload_parses_and_classifies_as_its_readme_says() {
    let mut on_disk: Vec<String> = std::fs::read_dir(gitlab_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = GITLAB_EXPECTED.iter().map(|(file, _)| *file).collect();
    assert_eq!(
        on_disk, listed,
        "a GitLab payload file was added or removed: update GITLAB_EXPECTED"
    );
    let mut failures = Vec::new();
    for (file, expected) in GITLAB_EXPECTED {
        let got = kind(&parse_gitlab_file(file));
        if got != *expected {
            failures.push(format!("{file}: expected {expected}, got {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gitlab_merge_request_event_carries_what_the_flows_need() {
    let Event::GitLabMergeRequest(e) = parse_gitlab_file("merge_request.update.new-commit.json")
    else {
        panic!("not a merge request event");
    };
    assert_eq!(
        e.action,
        MergeRequestAction::Pushed {
            oldrev: cascade::event::Sha::new("1ca7e340460796fe3eb17e2ea1b383ac4a1c95b7").unwrap()
        }
    );
    assert_eq!(e.project.id, 910);
    assert_eq!(e.project.path_with_namespace, "quan.hoang/atlantis-example");
    assert_eq!(e.project.repo_key(), "gitlab:quan.hoang/atlantis-example");
    assert_eq!(
        e.project.git_http_url,
        "https://gitlab.com/quan.hoang/atlantis-example.git"
    );
    let mr = &e.merge_request;
    assert_eq!(mr.iid, 3);
    assert_eq!(
        mr.head_sha.as_str(),
        "5ff66a1f7404deee915b50998c340e96d995f048"
    );
    assert_eq!(
        (mr.source_branch.as_str(), mr.target_branch.as_str()),
        ("get-event-payload", "main")
    );
    assert_eq!((mr.source_project_id, mr.target_project_id), (910, 910));
    assert!(!mr.fork());
    assert!(!mr.draft);
    assert_eq!(mr.author_id, 255);
    assert_eq!(e.user.username, "quan.hoang");
    assert_eq!(e.user.id, None, "this payload's user has no id");

    // `draft` where GitLab sends it; `work_in_progress` in older payloads.
    let mut body: Value =
        serde_json::from_slice(&gitlab_payload("merge_request.open.json")).unwrap();
    body["object_attributes"]["work_in_progress"] = true.into();
    let Ok(Event::GitLabMergeRequest(e)) =
        parse_gitlab_event("Merge Request Hook", &serde_json::to_vec(&body).unwrap())
    else {
        panic!("not a merge request event");
    };
    assert!(e.merge_request.draft);
    assert_eq!(e.user.id, Some(1));
}

#[test]
fn gitlab_note_event_carries_what_the_flows_need() {
    let Event::GitLabNote(n) = parse_gitlab_file("note.merge_request.2.json") else {
        panic!("not a note event");
    };
    assert_eq!(
        n.project.path_with_namespace,
        "lkysow-test/subgroup/sub-subgroup/atlantis-example"
    );
    assert_eq!(n.project.id, 7804027);
    assert_eq!(n.note.id, 96056916);
    assert_eq!(n.note.body, "atlantis plan");
    assert_eq!(n.note.author_id, 1755902);
    assert_eq!(n.merge_request.iid, 2);
    assert_eq!(
        n.merge_request.head_sha.as_str(),
        "901d9770ef1a6862e2a73ec1bacc73590abb9aff"
    );
    assert!(!n.merge_request.fork());
    assert_eq!(n.merge_request.author_id, 1755902);
    assert_eq!(n.user.username, "lkysow");
    assert_eq!(n.user.id, Some(1755902), "the note's author id stands in");
}

/// A note on an issue, as GitLab's "Comment on an issue" example describes it: the
/// merge request note with the issue in place of the merge request.
fn on_issue(b: &mut Value) {
    b["object_attributes"]["noteable_type"] = "Issue".into();
    remove(b, "merge_request");
    b["issue"] = serde_json::json!({
        "id": 92, "iid": 17, "title": "Drift", "state": "opened", "author_id": 1,
        "project_id": b["project"]["id"], "confidential": false,
    });
}

#[test]
fn gitlab_issue_note_carries_what_the_drift_flow_needs() {
    let Event::GitLabIssueNote(n) = gitlab_edited("note.merge_request.json", on_issue).unwrap()
    else {
        panic!("not an issue note event");
    };
    let Event::GitLabNote(on_mr) = parse_gitlab_file("note.merge_request.json") else {
        panic!("not a note event");
    };
    assert_eq!(n.issue.iid, 17);
    assert_eq!(n.note, on_mr.note);
    assert_eq!(n.user, on_mr.user);
    assert_eq!(n.project, on_mr.project);
    // Older payloads name no confidentiality on the issue: public.
    let older = gitlab_kind("note.merge_request.json", |b| {
        on_issue(b);
        remove(b, "issue.confidential");
    });
    assert_eq!(older, "gitlab note IssueComment");
}

#[test]
fn gitlab_issue_notes_that_are_not_public_new_commands_are_ignored() {
    let file = "note.merge_request.json";
    let ignored = |action: &str| format!("ignored gitlab:Note Hook Some({action:?})");
    let cases: [(&str, Edit); 5] = [
        ("create", |b| {
            on_issue(b);
            b["object_attributes"]["system"] = true.into();
        }),
        ("create", |b| {
            on_issue(b);
            b["object_attributes"]["internal"] = true.into();
        }),
        ("create", |b| {
            on_issue(b);
            b["object_attributes"]["confidential"] = true.into();
        }),
        // A public note on a confidential issue is still seen by members only.
        ("create", |b| {
            on_issue(b);
            b["issue"]["confidential"] = true.into();
        }),
        ("update", |b| {
            on_issue(b);
            b["object_attributes"]["action"] = "update".into();
        }),
    ];
    for (action, edit) in cases {
        assert_eq!(gitlab_kind(file, edit), ignored(action));
    }
    // Confidential notes arrive under their own hook, never read.
    let mut body: Value = serde_json::from_slice(&gitlab_payload(file)).unwrap();
    on_issue(&mut body);
    let hook = parse_gitlab_event(
        "Confidential Note Hook",
        &serde_json::to_vec(&body).unwrap(),
    );
    assert_eq!(
        kind(&hook.unwrap()),
        r#"ignored gitlab:Confidential Note Hook Some("create")"#
    );
    // An issue note without its issue is not GitLab's shape; nor is an overlong note.
    for (edit, path) in [
        (
            (|b| {
                on_issue(b);
                remove(b, "issue");
            }) as Edit,
            "issue",
        ),
        (
            |b| {
                on_issue(b);
                remove(b, "issue.iid");
            },
            "issue.iid",
        ),
        (
            |b| {
                on_issue(b);
                b["object_attributes"]["note"] = "x".repeat(1_000_001).into();
            },
            "object_attributes.note",
        ),
    ] {
        match gitlab_edited(file, edit) {
            Err(e @ ParseError::Shape { .. }) => {
                assert!(e.to_string().contains(&format!(": {path}: ")), "{e}")
            }
            other => panic!("expected a shape error at {path}, got {other:?}"),
        }
    }
}

/// A change to a payload, before it is parsed.
type Edit = fn(&mut Value);

/// `file` as GitLab would send it after `edit`, parsed.
fn gitlab_edited(file: &str, edit: impl FnOnce(&mut Value)) -> Result<Event, ParseError> {
    let mut body: Value = serde_json::from_slice(&gitlab_payload(file)).unwrap();
    edit(&mut body);
    parse_gitlab_event(
        &gitlab_hook_of(file),
        &serde_json::to_vec_pretty(&body).unwrap(),
    )
}

fn gitlab_kind(file: &str, edit: impl FnOnce(&mut Value)) -> String {
    kind(&gitlab_edited(file, edit).unwrap_or_else(|e| panic!("{file}: {e}")))
}

#[test]
fn gitlab_draft_changes_route_one_way_only() {
    let ready = "merge_request.update.mark-as-ready.json";
    // The same payload turned around (draft true → false) is ready.
    assert_eq!(
        gitlab_kind(ready, |b| {
            b["changes"]["draft"] = serde_json::json!({"previous": true, "current": false});
            b["object_attributes"]["draft"] = false.into();
        }),
        "gitlab merge_request Ready"
    );
    // `changes.draft` decides over the title when both are sent.
    assert_eq!(
        gitlab_kind(ready, |b| {
            b["changes"]["title"] = serde_json::json!({"previous": "Draft: x", "current": "x"});
        }),
        r#"ignored gitlab:Merge Request Hook Some("update")"#
    );
    // A title losing its prefix while the merge request stays a draft is not ready.
    assert_eq!(
        gitlab_kind("merge_request.update.mark-as-ready.2.json", |b| {
            b["object_attributes"]["work_in_progress"] = true.into();
        }),
        r#"ignored gitlab:Merge Request Hook Some("update")"#
    );
    // New commits on a draft are still a new head: whether drafts wait is the bot's rule.
    assert_eq!(
        gitlab_kind("merge_request.update.new-commit.json", |b| {
            b["object_attributes"]["draft"] = true.into();
        }),
        "gitlab merge_request NewHead pushed"
    );
    // Some versions send an empty `oldrev` with no new commits.
    assert_eq!(
        gitlab_kind("merge_request.update.title.json", |b| {
            b["object_attributes"]["oldrev"] = "".into();
        }),
        r#"ignored gitlab:Merge Request Hook Some("update")"#
    );
}

#[test]
fn gitlab_approvals_are_reviews_and_unknown_actions_are_ignored_without_decoding() {
    // An approval given or taken back may turn an apply-after-merge status green or not.
    for action in ["approved", "unapproved", "approval", "unapproval"] {
        let got = gitlab_kind("merge_request.open.json", |b| {
            b["object_attributes"]["action"] = action.into();
        });
        assert_eq!(got, "gitlab merge_request Reviewed", "{action}");
    }
    let got = gitlab_kind("merge_request.open.json", |b| {
        b["object_attributes"]["action"] = "label".into();
        remove(b, "object_attributes.last_commit");
        remove(b, "project");
    });
    assert_eq!(got, "ignored gitlab:Merge Request Hook Some(\"label\")");
}

#[test]
fn gitlab_notes_that_are_not_public_new_commands_are_ignored() {
    let file = "note.merge_request.json";
    let ignored = |action: &str| format!("ignored gitlab:Note Hook Some({action:?})");
    let cases: [(&str, Edit); 5] = [
        ("create", |b| b["object_attributes"]["system"] = true.into()),
        ("create", |b| {
            b["object_attributes"]["confidential"] = true.into()
        }),
        ("create", |b| {
            b["object_attributes"]["internal"] = true.into()
        }),
        ("update", |b| {
            b["object_attributes"]["action"] = "update".into()
        }),
        ("create", |b| {
            b["object_attributes"]["noteable_type"] = "Commit".into();
            remove(b, "merge_request");
        }),
    ];
    for (action, edit) in cases {
        assert_eq!(gitlab_kind(file, edit), ignored(action));
    }
    // The confidential hook is never read, whatever its body says.
    assert_eq!(
        kind(&parse_gitlab_event("Confidential Note Hook", &gitlab_payload(file)).unwrap()),
        r#"ignored gitlab:Confidential Note Hook Some("create")"#
    );
    // Hooks cascade does not handle are ignored, body unread beyond JSON.
    assert_eq!(
        kind(&parse_gitlab_event("Push Hook", br#"{"object_kind":"push"}"#).unwrap()),
        "ignored gitlab:Push Hook None"
    );
}

#[test]
fn gitlab_malformed_bodies_are_errors() {
    let body = gitlab_payload("merge_request.open.json");
    for broken in [&body[..body.len() / 2], b"", b"not json", b"[1]"] {
        for hook in ["Merge Request Hook", "Note Hook", "Push Hook"] {
            assert!(
                parse_gitlab_event(hook, broken).is_err(),
                "{hook} {:?}",
                String::from_utf8_lossy(&broken[..broken.len().min(40)])
            );
        }
    }
    let shape_error = |file: &str, edit: Edit| match gitlab_edited(file, edit) {
        Err(e @ ParseError::Shape { .. }) => e.to_string(),
        other => panic!("{file}: expected a shape error, got {other:?}"),
    };
    let mr = "merge_request.update.new-commit.json";
    let note = "note.merge_request.json";
    let cases: [(&str, Edit, &str); 9] = [
        (
            mr,
            |b| remove(b, "object_attributes.last_commit"),
            "object_attributes.last_commit",
        ),
        (
            mr,
            |b| remove(b, "object_attributes.iid"),
            "object_attributes.iid",
        ),
        (
            mr,
            |b| remove(b, "project.path_with_namespace"),
            "project.path_with_namespace",
        ),
        (
            mr,
            |b| b["object_attributes"]["oldrev"] = "HEAD~1".into(),
            "object_attributes.oldrev",
        ),
        (
            mr,
            |b| b["project"]["path_with_namespace"] = "../../etc".into(),
            "project.path_with_namespace",
        ),
        (
            mr,
            |b| b["project"]["git_http_url"] = "file:///etc/passwd".into(),
            "project.git_http_url",
        ),
        (
            mr,
            |b| b["object_attributes"]["source_branch"] = "a".repeat(2000).into(),
            "object_attributes.source_branch",
        ),
        (
            note,
            |b| remove(b, "merge_request.last_commit"),
            "merge_request.last_commit",
        ),
        (
            note,
            |b| b["object_attributes"]["note"] = "x".repeat(1_000_001).into(),
            "object_attributes.note",
        ),
    ];
    for (file, edit, path) in cases {
        let message = shape_error(file, edit);
        assert!(
            message.contains(&format!(": {path}: ")),
            "{file}: {message}"
        );
        assert!(
            message.len() < 300,
            "an error quotes the payload: {message}"
        );
    }
}

// ---------------------------------------------------------------- GitLab authentication

#[test]
fn gitlab_token_is_compared_with_every_secret() {
    let both = secrets(&["old-token", "new-token"]);
    assert_eq!(verify_token(&both, Some("old-token")), Ok(()));
    assert_eq!(verify_token(&both, Some("new-token")), Ok(()));
    for wrong in [
        "new-token ",
        "NEW-TOKEN",
        "new-toke",
        "",
        "old-tokennew-token",
    ] {
        assert_eq!(
            verify_token(&both, Some(wrong)),
            Err(TokenError::Mismatch),
            "{wrong:?}"
        );
    }
    assert_eq!(verify_token(&both, None), Err(TokenError::Missing));
    assert_eq!(verify_token(&[], Some("x")), Err(TokenError::NoSecret));
    assert_eq!(
        verify_token(&secrets(&[""]), Some("")),
        Err(TokenError::NoSecret)
    );
}

/// The Standard Webhooks specification's published test vector.
const SIGNING_TOKEN: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[test]
fn gitlab_signature_matches_the_standard_webhooks_vector() {
    let key = SigningKey::parse(SIGNING_TOKEN).unwrap();
    let (id, ts, body) = (
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        br#"{"test": 2432232314}"#,
    );
    let signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    assert_eq!(key.sign(id, ts, body), signature);
    let headers = [
        ("webhook-id", id),
        ("webhook-timestamp", "1614265330"),
        ("webhook-signature", signature),
    ];
    assert_eq!(verify_signing(&key, headers, body, ts), Ok(()));
}

#[test]
fn gitlab_signature_verifies_within_five_minutes_only() {
    let key = SigningKey::parse(SIGNING_TOKEN).unwrap();
    let body = gitlab_payload("note.merge_request.json");
    let id = "f5e5f430-f57b-4e6e-9fac-d9128cd7232f";
    let now = 1_700_000_000;
    let signed = key.sign(id, now, &body);
    let ts = now.to_string();
    let headers = |signature: &str, ts: &str| {
        vec![
            ("webhook-id".to_string(), id.to_string()),
            ("Webhook-Timestamp".to_string(), ts.to_string()),
            ("webhook-signature".to_string(), signature.to_string()),
        ]
    };
    let check = |h: &[(String, String)], body: &[u8], now: i64| {
        verify_signing(
            &key,
            h.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            body,
            now,
        )
    };
    assert_eq!(check(&headers(&signed, &ts), &body, now), Ok(()));
    // Clock skew up to five minutes either way; no more.
    assert_eq!(check(&headers(&signed, &ts), &body, now + 300), Ok(()));
    assert_eq!(check(&headers(&signed, &ts), &body, now - 300), Ok(()));
    assert_eq!(
        check(&headers(&signed, &ts), &body, now + 301),
        Err(SigningError::Stale)
    );
    // Several signatures (key rotation): any v1 entry may match; other versions are skipped.
    let several = format!("v1a,abc v1,{} {signed}", "A".repeat(44));
    assert_eq!(check(&headers(&several, &ts), &body, now), Ok(()));
    // The same signature over another body, id or timestamp does not verify.
    assert_eq!(
        check(&headers(&signed, &ts), &body[1..], now),
        Err(SigningError::Mismatch)
    );
    let later = (now + 1).to_string();
    assert_eq!(
        check(&headers(&signed, &later), &body, now),
        Err(SigningError::Mismatch)
    );
    let other = SigningKey::parse("whsec_dGhlIG90aGVyIGtleSB0aGF0IGlzIG5vdCBpdA==").unwrap();
    assert_eq!(
        check(&headers(&other.sign(id, now, &body), &ts), &body, now),
        Err(SigningError::Mismatch)
    );
    // Missing or malformed headers.
    assert_eq!(
        check(&headers(&signed, &ts)[..2], &body, now),
        Err(SigningError::Missing("webhook-signature"))
    );
    assert_eq!(
        check(&headers(&signed, "soon"), &body, now),
        Err(SigningError::Malformed("webhook-timestamp"))
    );
    assert_eq!(
        check(&headers("v2,abc", &ts), &body, now),
        Err(SigningError::Malformed("webhook-signature"))
    );
    for bad in [
        "",
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_",
        "whsec_***",
    ] {
        assert!(SigningKey::parse(bad).is_err(), "{bad:?}");
    }
    assert!(!format!("{key:?}").contains("MfKQ"));
}

#[test]
fn gitlab_delivery_id_prefers_the_idempotency_key() {
    let key = "f5e5f430-f57b-4e6e-9fac-d9128cd7232f";
    let uuid = "13792a34-cac6-4fda-95a8-c58e00a3954e";
    let d = GitLabDelivery::from_headers([
        ("X-Gitlab-Event", "Merge Request Hook"),
        ("X-Gitlab-Event-UUID", uuid),
        ("Idempotency-Key", key),
    ])
    .unwrap();
    assert_eq!(d.id.as_str(), format!("gitlab-{key}"));
    assert_eq!(d.hook, "Merge Request Hook");
    assert_eq!(d.stored_event(), "gitlab:Merge Request Hook");
    let errors = [
        GitLabDelivery::from_headers([("X-Gitlab-Event", "Note Hook")]),
        GitLabDelivery::from_headers([("Idempotency-Key", key)]),
        GitLabDelivery::from_headers([("X-Gitlab-Event", "Note Hook"), ("Idempotency-Key", "")]),
        GitLabDelivery::from_headers([
            ("X-Gitlab-Event", "Note Hook"),
            ("Idempotency-Key", key),
            ("idempotency-key", key),
        ]),
        GitLabDelivery::from_headers([("X-Gitlab-Event", "Note_Hook\n"), ("Idempotency-Key", key)]),
    ];
    for error in errors {
        assert!(error.is_err(), "{error:?}");
    }
}
