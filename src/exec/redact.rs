//! Redacting secret-looking values from command output before it reaches a
//! log: `password = …`, tokens, AWS access keys, private keys.

use regex::Regex;
use std::sync::LazyLock;

static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // key = value / key: value / "key": "value" where the key names a secret.
        (
            r#"(?i)("?[a-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|private[_-]?key|access[_-]?key|credentials?)[a-z0-9_.-]*"?\s*[:=]\s*)("[^"]*"|'[^']*'|\S+)"#,
            "${1}[redacted]",
        ),
        (r"\bAKIA[0-9A-Z]{16}\b", "[redacted]"),
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}\b", "[redacted]"),
        (r"\bxox[abpr]-[A-Za-z0-9-]{10,}\b", "[redacted]"),
        (r"-----BEGIN [A-Z ]*PRIVATE KEY-----", "[redacted private key]"),
    ]
    .into_iter()
    .map(|(re, with)| (Regex::new(re).expect("valid pattern"), with))
    .collect()
});

/// The line with secret-looking values replaced by `[redacted]`.
pub fn redact(line: &str) -> String {
    let mut out = line.to_string();
    for (re, with) in PATTERNS.iter() {
        if re.is_match(&out) {
            out = re.replace_all(&out, *with).into_owned();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_secret_looking_values() {
        assert_eq!(
            redact("  + db_password = \"hunter2\""),
            "  + db_password = [redacted]"
        );
        assert_eq!(redact("token: abc.def"), "token: [redacted]");
        assert_eq!(
            redact("key AKIAABCDEFGHIJKLMNOP here"),
            "key [redacted] here"
        );
        assert_eq!(
            redact("-----BEGIN RSA PRIVATE KEY-----"),
            "[redacted private key]"
        );
        assert_eq!(
            redact("Plan: 1 to add, 0 to change"),
            "Plan: 1 to add, 0 to change"
        );
    }
}
