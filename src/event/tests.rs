use super::*;
use secrecy::SecretSlice;
use serde_json::json;

const DOCS_SECRET: &[u8] = b"It's a Secret to Everybody";
const DOCS_SIGNATURE: &str =
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

#[test]
fn signature_docs_vector() {
    let secrets = vec![SecretSlice::from(DOCS_SECRET.to_vec())];
    assert_eq!(
        verify_signature(&secrets, Some(DOCS_SIGNATURE), b"Hello, World!"),
        Ok(())
    );
    assert_eq!(
        verify_signature(&secrets, Some(DOCS_SIGNATURE), b"Hello, World"),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn signature_empty_secrets_are_skipped() {
    assert_eq!(
        verify_signature(&[], Some(DOCS_SIGNATURE), b"Hello, World!"),
        Err(SignatureError::NoSecret)
    );
    assert_eq!(
        verify_signature(
            &[SecretSlice::from(Vec::new())],
            Some(DOCS_SIGNATURE),
            b"Hello, World!"
        ),
        Err(SignatureError::NoSecret)
    );
    let rotated = vec![
        SecretSlice::from(Vec::new()),
        SecretSlice::from(DOCS_SECRET.to_vec()),
    ];
    assert_eq!(
        verify_signature(&rotated, Some(DOCS_SIGNATURE), b"Hello, World!"),
        Ok(())
    );
}

#[test]
fn signature_shape_is_checked_before_any_secret() {
    let secrets = vec![SecretSlice::from(DOCS_SECRET.to_vec())];
    for header in [
        "",
        "sha256=",
        "sha1=7d38cdd689735b008b3c702edd92eea23791c5f6",
        "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        " sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17 ",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1z",
    ] {
        assert!(
            matches!(
                verify_signature(&secrets, Some(header), b"Hello, World!"),
                Err(SignatureError::Malformed(_))
            ),
            "{header:?} should be malformed"
        );
    }
}

#[test]
fn delivery_headers_are_case_insensitive() {
    let headers = [
        ("content-type", "application/json"),
        ("x-github-event", "pull_request"),
        ("X-GITHUB-DELIVERY", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
    ];
    let delivery = Delivery::from_headers(headers).unwrap();
    assert_eq!(delivery.event, "pull_request");
    assert_eq!(delivery.id.as_str(), "72d3162e-cc78-11e3-81ab-4c9367dc0958");
    assert_eq!(header(headers, "Content-Type"), Some("application/json"));
    assert_eq!(header(headers, "X-Hub-Signature-256"), None);
}

#[test]
fn delivery_headers_missing_repeated_or_invalid() {
    let id = ("X-GitHub-Delivery", "1");
    let event = ("X-GitHub-Event", "ping");
    assert_eq!(
        Delivery::from_headers([id]),
        Err(HeaderError::Missing(EVENT_HEADER))
    );
    assert_eq!(
        Delivery::from_headers([event]),
        Err(HeaderError::Missing(DELIVERY_HEADER))
    );
    assert_eq!(
        Delivery::from_headers([event, id, ("x-github-event", "push")]),
        Err(HeaderError::Repeated(EVENT_HEADER))
    );
    for bad in ["", "Pull_Request", "pull request", "ping\n"] {
        assert!(matches!(
            Delivery::from_headers([("X-GitHub-Event", bad), id]),
            Err(HeaderError::Invalid {
                header: EVENT_HEADER,
                ..
            })
        ));
    }
    let long = "a".repeat(65);
    for bad in [
        "",
        "a b",
        "id\r\nX-Injected: 1",
        long.as_str(),
        "../../etc/passwd",
        "<script>",
        "id'--",
        "72d3162e_cc78",
    ] {
        assert!(matches!(
            Delivery::from_headers([event, ("X-GitHub-Delivery", bad)]),
            Err(HeaderError::Invalid {
                header: DELIVERY_HEADER,
                ..
            })
        ));
    }
}

#[test]
fn sha_accepts_sha1_and_sha256_lowercase_only() {
    assert!(Sha::new(&"a".repeat(40)).is_ok());
    assert!(Sha::new(&"0".repeat(64)).is_ok());
    assert_eq!(Sha::new(&"A".repeat(40)), Err(InvalidSha));
    assert_eq!(Sha::new(&"a".repeat(39)), Err(InvalidSha));
    assert_eq!(Sha::new("main"), Err(InvalidSha));
}

fn account(login: &str, kind: &str) -> serde_json::Value {
    json!({ "login": login, "id": 1, "type": kind })
}

fn repository(full_name: &str, id: u64) -> serde_json::Value {
    let (owner, name) = full_name.split_once('/').unwrap();
    json!({
        "id": id, "name": name, "full_name": full_name, "owner": account(owner, "User"),
        "default_branch": "main", "private": true,
        "clone_url": format!("https://github.com/{full_name}.git"),
    })
}

fn pull_request_body(action: &str) -> serde_json::Value {
    json!({
        "action": action,
        "number": 7,
        "pull_request": {
            "number": 7, "node_id": "PR_1", "title": "Grow the VPC", "state": "open",
            "user": account("alice", "User"), "author_association": "MEMBER",
            "draft": false, "merged": null,
            "head": { "ref": "grow", "sha": "1".repeat(40), "repo": repository("acme/infra", 10) },
            "base": { "ref": "main", "sha": "2".repeat(40), "repo": repository("acme/infra", 10) },
        },
        "repository": repository("acme/infra", 10),
        "installation": { "id": 42 },
        "sender": account("alice", "User"),
    })
}

fn parse(event: &str, body: &serde_json::Value) -> Result<Event, ParseError> {
    parse_event(event, &serde_json::to_vec(body).unwrap())
}

fn pull_request_event(event: Result<Event, ParseError>) -> PullRequestEvent {
    match event {
        Ok(Event::PullRequest(pr)) => pr,
        other => panic!("expected a pull request event, got {other:?}"),
    }
}

#[test]
fn pull_request_minimal_body() {
    let pr = pull_request_event(parse("pull_request", &pull_request_body("opened")));
    assert_eq!(pr.action, PullRequestAction::Opened);
    assert_eq!(pr.installation, Some(InstallationId(42)));
    assert_eq!(pr.repository.owner, "acme");
    assert!(!pr.pull_request.merged, "null merged is not merged");
    assert!(!pr.pull_request.head.fork);
    assert_eq!(pr.pull_request.head.ref_name, "grow");
    assert_eq!(
        pr.pull_request.author_association,
        Some(AuthorAssociation::Member)
    );
}

#[test]
fn pull_request_from_a_deleted_fork_is_a_fork() {
    let mut body = pull_request_body("reopened");
    body["pull_request"]["head"]["repo"] = serde_json::Value::Null;
    let pr = pull_request_event(parse("pull_request", &body));
    assert!(pr.pull_request.head.fork);
    assert_eq!(pr.pull_request.head.repo_full_name, None);
}

#[test]
fn pull_request_from_another_repository_is_a_fork_even_if_renamed_alike() {
    let mut body = pull_request_body("opened");
    body["pull_request"]["head"]["repo"] = repository("acme/infra", 11);
    assert!(
        pull_request_event(parse("pull_request", &body))
            .pull_request
            .head
            .fork
    );
}

#[test]
fn pull_request_synchronize_needs_before_and_after() {
    let mut body = pull_request_body("synchronize");
    body["before"] = json!("3".repeat(40));
    body["after"] = json!("1".repeat(40));
    let pr = pull_request_event(parse("pull_request", &body));
    assert!(matches!(pr.action, PullRequestAction::Synchronize { .. }));
    body.as_object_mut().unwrap().remove("before");
    assert_eq!(
        parse("pull_request", &body).unwrap_err().to_string(),
        "`pull_request` payload: before: missing field `before`"
    );
}

#[test]
fn pull_request_action_is_required() {
    let mut body = pull_request_body("opened");
    body.as_object_mut().unwrap().remove("action");
    assert_eq!(
        parse("pull_request", &body),
        Err(ParseError::Shape {
            event: "pull_request".into(),
            path: "action".into(),
            reason: "missing field `action`".into()
        })
    );
    body["action"] = json!(3);
    assert!(
        matches!(parse("pull_request", &body), Err(ParseError::Shape { path, .. }) if path == "action")
    );
}

#[test]
fn pull_request_unhandled_action_is_ignored_without_decoding() {
    let body = json!({ "action": "labeled" });
    assert_eq!(
        parse("pull_request", &body),
        Ok(Event::Ignored {
            event: "pull_request".into(),
            action: Some("labeled".into())
        })
    );
}

#[test]
fn unknown_event_is_ignored_and_keeps_its_action() {
    assert_eq!(
        parse(
            "deployment_status",
            &json!({ "action": "created", "x": [1] })
        ),
        Ok(Event::Ignored {
            event: "deployment_status".into(),
            action: Some("created".into())
        })
    );
    assert_eq!(
        parse("push", &json!({ "ref": "refs/heads/main" })),
        Ok(Event::Ignored {
            event: "push".into(),
            action: None
        })
    );
}

#[test]
fn body_must_be_a_json_object() {
    assert!(matches!(
        parse_event("push", b"{"),
        Err(ParseError::Malformed(_))
    ));
    assert!(matches!(
        parse_event("push", b""),
        Err(ParseError::Malformed(_))
    ));
    assert!(matches!(
        parse_event("push", b"payload=%7B%7D"),
        Err(ParseError::Malformed(_))
    ));
    assert!(matches!(
        parse_event("push", b"[]"),
        Err(ParseError::Shape { path, .. }) if path == "(root)"
    ));
}

#[test]
fn issue_comment_needs_an_issue_to_decide() {
    let comment = json!({ "action": "created", "comment": {} });
    assert!(matches!(
        parse("issue_comment", &comment),
        Err(ParseError::Shape { path, .. }) if path == "issue"
    ));
    // A new comment on a plain issue is read whole now (the drift issue's commands).
    let on_issue = json!({ "action": "created", "issue": { "pull_request": null } });
    assert!(matches!(
        parse("issue_comment", &on_issue),
        Err(ParseError::Shape { .. })
    ));
    // An edit is ignored before its shape matters, on an issue or a pull request.
    let edited = json!({ "action": "edited", "issue": { "pull_request": null } });
    assert_eq!(
        parse("issue_comment", &edited),
        Ok(Event::Ignored {
            event: "issue_comment".into(),
            action: Some("edited".into())
        })
    );
}

#[test]
fn ping_without_a_hook_is_still_a_ping() {
    assert_eq!(
        parse("ping", &json!({ "zen": "Keep it logically awesome." })),
        Ok(Event::Ping {
            zen: "Keep it logically awesome.".into(),
            hook_id: None,
            app_id: None
        })
    );
    assert!(matches!(
        parse("ping", &json!({ "hook_id": 1 })),
        Err(ParseError::Shape { path, .. }) if path == "zen"
    ));
}

#[test]
fn unknown_account_kinds_and_associations_do_not_reject_the_event() {
    let mut body = pull_request_body("opened");
    body["pull_request"]["user"]["type"] = json!("Mannequin");
    body["pull_request"]["author_association"] = json!("SOMETHING_NEW");
    let pr = pull_request_event(parse("pull_request", &body)).pull_request;
    assert_eq!(pr.author.kind, AccountKind::Other);
    assert_eq!(pr.author_association, Some(AuthorAssociation::Other));
}

// The JSON path a shape error names.

mod decode_paths {
    use super::super::{ParseError, decode};
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        x: Inner,
        n: u64,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        s: String,
        v: Vec<Leaf>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Leaf {
        k: u32,
    }

    fn path_of(body: &str) -> (String, String) {
        match decode::<Outer>("test", body.as_bytes()) {
            Err(ParseError::Shape { path, reason, .. }) => (path, reason),
            other => panic!("{body} must not decode: {other:?}"),
        }
    }

    #[test]
    fn names_a_missing_field_in_a_nested_object() {
        let (path, reason) = path_of(r#"{"x": {"v": []}, "n": 1}"#);
        assert_eq!(path, "x.s");
        assert_eq!(reason, "missing field `s`");
    }

    #[test]
    fn names_a_missing_field_at_the_root() {
        assert_eq!(path_of(r#"{"x": {"s": "", "v": []}}"#).0, "n");
    }

    #[test]
    fn names_a_missing_field_inside_an_array_element() {
        let (path, _) = path_of(r#"{"x": {"s": "a", "v": [{"k": 1}, {"j": {"k": 2}}]}, "n": 1}"#);
        assert_eq!(path, "x.v[1].k");
    }

    #[test]
    fn names_a_value_of_the_wrong_type() {
        assert_eq!(path_of(r#"{"x": {"s": null, "v": []}, "n": 1}"#).0, "x.s");
        assert_eq!(path_of(r#"{"x": {"s": "", "v": []}, "n": -1}"#).0, "n");
        assert_eq!(path_of(r#"{"x": {"s": "", "v": []}, "n": 1.5}"#).0, "n");
        assert_eq!(path_of(r#"{"x": "flat", "n": 1}"#).0, "x");
        assert_eq!(
            path_of(r#"{"x": {"s": {"a": [1]}, "v": []}, "n": 1}"#).0,
            "x.s"
        );
        assert_eq!(path_of(r#"{"x": {"s": [], "v": []}, "n": 1}"#).0, "x.s");
    }

    #[test]
    fn names_an_array_element_of_the_wrong_type() {
        let (path, reason) =
            path_of(r#"{"x": {"s": "", "v": [{"k": 1}, {"k": 2}, {"k": "3"}]}, "n": 1}"#);
        assert_eq!(path, "x.v[2].k");
        assert_eq!(reason, r#"invalid type: string "3", expected u32"#);
    }

    #[test]
    fn reads_across_lines_and_escapes() {
        let body =
            "{\n  \"x\": {\"s\": \"é \\\" } ]\",\n \"v\": [ {\"k\": true} ]},\n  \"n\": 1\n}";
        assert_eq!(path_of(body).0, "x.v[0].k");
    }

    #[test]
    fn a_root_of_the_wrong_type_is_the_root() {
        let (path, reason) = path_of(r#""a string""#);
        assert_eq!(path, "(root)");
        assert!(reason.starts_with("invalid type: string"), "{reason}");
    }

    #[test]
    fn a_struct_given_as_an_array_is_read_by_position() {
        // serde's derive accepts `[x, n]` for a struct; the first element is wrong.
        assert_eq!(path_of("[1, 2]").0, "[0]");
    }

    #[test]
    fn keys_with_escapes_are_decoded() {
        let (path, _) = path_of(r#"{"x": {"s": "", "v": []}, "\u006e": "one"}"#);
        assert_eq!(path, "n");
    }

    #[test]
    fn trailing_text_is_at_the_root() {
        let (path, reason) = path_of(r#"{"x": {"s": "", "v": []}, "n": 1} x"#);
        assert_eq!(path, "(root)");
        assert_eq!(reason, "trailing characters");
    }
}
