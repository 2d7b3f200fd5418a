//! What git says reaches logs and comments only redacted.

use super::*;

#[test]
fn redaction_removes_userinfo_secrets_and_headers() {
    let text = "fatal: unable to access 'https://x-access-token:ghs_X@github.com/a/b.git/': \
                Authorization: Basic eHl6 was sent; token ghs_SECRET";
    let out = redact(text, &["ghs_SECRET".to_string()]);
    assert!(!out.contains("ghs_X"), "{out}");
    assert!(!out.contains("eHl6"), "{out}");
    assert!(!out.contains("ghs_SECRET"), "{out}");
    assert!(out.contains("https://***@github.com/a/b.git/"), "{out}");
    assert_eq!(redact("file:///tmp/x.git", &[]), "file:///tmp/x.git");
}
