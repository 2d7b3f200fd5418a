//! Webhook deliveries: signatures (GitHub's documented vector, every row of
//! `SIGNATURES.tsv`, rotation and every way a header can be wrong) and every
//! real payload in `../shared/webhooks/github/` parsed into its typed event.

mod support;

use cascade::event::{
    AccountKind, Event, InstallationAction, InstallationRepositoriesAction, ParseError,
    PullRequestAction, SignatureError, parse_event, verify_signature,
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

fn secrets(list: &[&str]) -> Vec<Vec<u8>> {
    list.iter().map(|s| s.as_bytes().to_vec()).collect()
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
        Event::Installation(i) => format!("installation {:?}", i.action),
        Event::InstallationRepositories(i) => format!("installation_repositories {:?}", i.action),
        Event::Ping { .. } => "ping".into(),
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
    (
        "issue_comment.created.json",
        r#"ignored issue_comment Some("created")"#,
    ),
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
        r#"ignored pull_request_review Some("submitted")"#,
    ),
    (
        "pull_request_review.submitted.json",
        r#"ignored pull_request_review Some("submitted")"#,
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
