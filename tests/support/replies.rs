//! The bot's replies as snapshots: the whole text, byte for byte, with what changes from
//! run to run replaced by a name. Commits are made when a test runs, so their shas (40
//! and 7 hex digits) change, and with them plan ids and fingerprints (12); the names keep
//! their places in the text.

use regex::Regex;
use std::sync::LazyLock;

/// 40, 12 and 7 lowercase hex digits standing alone, longest first.
static VOLATILE: LazyLock<[(Regex, &str); 3]> = LazyLock::new(|| {
    [
        (r"\b[0-9a-f]{40}\b", "[sha]"),
        (r"\b[0-9a-f]{12}\b", "[id]"),
        (r"\b[0-9a-f]{7}\b", "[short-sha]"),
    ]
    .map(|(re, name)| (Regex::new(re).unwrap(), name))
});

/// `text` with its commit shas, plan ids and fingerprints named.
pub fn redacted(text: &str) -> String {
    VOLATILE.iter().fold(text.to_string(), |text, (re, name)| {
        re.replace_all(&text, *name).into_owned()
    })
}
