//! Keeping secrets out of everything cascade writes down or posts: per-unit
//! logs, failure excerpts, the details stored with each unit's result, and
//! what the engine hands to the comment.
//!
//! Owns the rules (values of secret-named keys, well-known token shapes, whole
//! PEM blocks over any number of lines, URL user-info) and the process-wide
//! registry of configured secrets (webhook secrets, the App's private key,
//! installation tokens: [`register_secret`]); and [`ServerPaths`], the server's own
//! directories replaced in what a pull request is shown. Never logs, stores or returns a
//! secret it was given, and never lets a short value (under
//! [`MIN_SECRET_LEN`] bytes) turn every occurrence of a common word into
//! `[redacted]`.
//!
//! PEM blocks need the whole stream, not a line: terraform prints keys as
//! heredocs, wraps diagnostics at word boundaries (so even the `BEGIN` label
//! can be split), or keeps `\n` escapes on one line. [`RedactStream`] therefore
//! carries state from line to line: from `-----BEGIN` to the dashes closing the
//! `-----END …-----` label everything is dropped. It holds no text while it
//! does so (memory is bounded by one line), and a block that never ends
//! redacts the rest of the stream: it fails closed. The same wrapping splits
//! `db_password = value` after the key or after the `=`: a line ending with a
//! secret-named key carries over, and the next line's leading value goes.

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use std::collections::VecDeque;
use std::sync::{Arc, LazyLock, Mutex, RwLock};

/// Secrets shorter than this are not redacted by value: they would match
/// ordinary words. (Patterns still catch them next to a secret-named key.)
pub const MIN_SECRET_LEN: usize = 8;

/// A line that ends with a secret-named key (and maybe its `=` / `:`), its value
/// wrapped onto the next line. Group 1: the separator, when it is on this line.
static TRAILING_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)"?[a-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|private[_-]?key|access[_-]?key|credentials?)[a-z0-9_.-]*"?\s*([:=])?\s*$"#,
    )
    .expect("valid pattern")
});
/// The value at the start of a line, after the separator of the previous line's key.
static LEADING_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^(\s*)("[^"]*"|'[^']*'|\S+)"#).expect("valid pattern"));
/// A separator and the value at the start of a line, after the previous line's key.
static LEADING_SEP_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^(\s*[:=]\s*)("[^"]*"|'[^']*'|\S+)"#).expect("valid pattern"));

/// The registry keeps the newest secrets (installation tokens are minted
/// hourly per installation; old ones have expired).
const MAX_REGISTERED: usize = 1024;

/// What a removed PEM block leaves in the text.
pub const PEM_MARK: &str = "[redacted PEM block]";
/// What a removed value leaves in the text.
pub const MARK: &str = "[redacted]";

static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // scheme://user:password@host (and scheme://token@host): the user-info goes.
        (
            r#"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@"'<>]+@"#,
            "${1}[redacted]@",
        ),
        // key = value / key: value / "key": "value" where the key names a secret.
        (
            r#"(?i)("?[a-z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|private[_-]?key|access[_-]?key|credentials?)[a-z0-9_.-]*"?\s*[:=]\s*)("[^"]*"|'[^']*'|\S+)"#,
            "${1}[redacted]",
        ),
        (r"\bAKIA[0-9A-Z]{16}\b", "[redacted]"),
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}\b", "[redacted]"),
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}\b", "[redacted]"),
        (r"\bxox[abpr]-[A-Za-z0-9-]{10,}\b", "[redacted]"),
    ]
    .into_iter()
    .map(|(re, with)| (Regex::new(re).expect("valid pattern"), with))
    .collect()
});

/// The configured secrets, newest last, and a matcher over them rebuilt when they change.
struct Registry {
    secrets: VecDeque<String>,
    matcher: Option<Arc<AhoCorasick>>,
}

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(|| {
    RwLock::new(Registry {
        secrets: VecDeque::new(),
        matcher: None,
    })
});

/// Serialises rebuilding the registry's matcher.
static REBUILD: Mutex<()> = Mutex::new(());

/// Adds a secret every redaction in this process removes from then on: a
/// webhook secret, the App's private key, an installation token. A value with
/// several lines (a PEM key) is also registered line by line. Values shorter
/// than [`MIN_SECRET_LEN`] bytes are ignored.
pub fn register_secret(value: &str) {
    let mut new: Vec<&str> = secret_parts(value).collect();
    if new.is_empty() {
        return;
    }
    let mut registry = REGISTRY.write().unwrap_or_else(|p| p.into_inner());
    new.retain(|s| !registry.secrets.iter().any(|known| known == s));
    if new.is_empty() {
        return;
    }
    for s in new {
        if registry.secrets.len() == MAX_REGISTERED {
            registry.secrets.pop_front();
        }
        registry.secrets.push_back(s.to_string());
    }
    registry.matcher = None;
}

/// `value` and, for a multi-line value, each of its lines: whatever is long enough to redact.
fn secret_parts(value: &str) -> impl Iterator<Item = &str> {
    let lines = value.contains('\n').then(|| value.lines()).into_iter();
    std::iter::once(value.trim())
        .chain(lines.flatten().map(str::trim))
        .filter(|s| s.len() >= MIN_SECRET_LEN)
}

fn registry_matcher() -> Option<Arc<AhoCorasick>> {
    if let Some(m) = &REGISTRY.read().unwrap_or_else(|p| p.into_inner()).matcher {
        return Some(m.clone());
    }
    let _turn = REBUILD.lock().unwrap_or_else(|p| p.into_inner());
    let mut registry = REGISTRY.write().unwrap_or_else(|p| p.into_inner());
    if registry.secrets.is_empty() {
        return None;
    }
    if registry.matcher.is_none() {
        registry.matcher = matcher(registry.secrets.iter().map(String::as_str));
    }
    registry.matcher.clone()
}

fn matcher<'a>(secrets: impl Iterator<Item = &'a str>) -> Option<Arc<AhoCorasick>> {
    let secrets: Vec<&str> = secrets.filter(|s| s.len() >= MIN_SECRET_LEN).collect();
    if secrets.is_empty() {
        return None;
    }
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(secrets)
        .ok()
        .map(Arc::new)
}

/// `text` (one line or many) with every secret cascade knows of removed: the
/// patterns, whole PEM blocks and the registered secrets.
pub fn redact(text: &str) -> String {
    Redactor::default().redact(text)
}

/// Redaction with secrets of its own (a child process's `TF_VAR_*` values,
/// for instance) on top of the registered ones.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    own: Option<Arc<AhoCorasick>>,
}

impl Redactor {
    /// A redactor that also removes each of `secrets` (those long enough).
    pub fn with_secrets<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Redactor {
        let parts: Vec<&str> = secrets.into_iter().flat_map(secret_parts).collect();
        Redactor {
            own: matcher(parts.into_iter()),
        }
    }

    /// `text` redacted as a whole: PEM blocks may span its lines.
    pub fn redact(&self, text: &str) -> String {
        let mut stream = self.stream();
        let mut out: Vec<String> = text.split('\n').filter_map(|l| stream.line(l)).collect();
        out.extend(stream.finish());
        out.join("\n")
    }

    /// A stream of lines redacted in order, for output too large to hold.
    pub fn stream(&self) -> RedactStream {
        RedactStream {
            own: self.own.clone(),
            registered: registry_matcher(),
            pem: Pem::Outside,
            key_wrapped: None,
        }
    }
}

/// `text` without the values the matchers find, then without what the patterns find.
fn redact_values(text: &str, matchers: [&Option<Arc<AhoCorasick>>; 2]) -> String {
    let mut out = text.to_string();
    for m in matchers.into_iter().flatten() {
        if m.is_match(&out) {
            out = m.replace_all(&out, &vec![MARK; m.patterns_len()]);
        }
    }
    for (re, with) in PATTERNS.iter() {
        if re.is_match(&out) {
            out = re.replace_all(&out, *with).into_owned();
        }
    }
    out
}

/// Where a stream stands with respect to a PEM block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pem {
    Outside,
    /// After `-----BEGIN`: dropping everything until `-----END`.
    Inside,
    /// After `-----END`: dropping the label until its closing dashes (which
    /// wrapping may have moved to a later line; at most this many more lines).
    Closing(u8),
}

/// Lines of one output stream, redacted in order (see the module header).
pub struct RedactStream {
    own: Option<Arc<AhoCorasick>>,
    registered: Option<Arc<AhoCorasick>>,
    pem: Pem,
    /// The previous line ended with a secret-named key: `Some(true)` with its
    /// separator, `Some(false)` without.
    key_wrapped: Option<bool>,
}

impl RedactStream {
    /// The line as it may be shown, or `None` when all of it lies inside a PEM block.
    /// A secret-named key at its end makes the next line's leading value go too.
    pub fn line(&mut self, line: &str) -> Option<String> {
        let wrapped = self.key_wrapped.take();
        let mut out = self.piece(line)?;
        if let Some(separated) = wrapped {
            let value = if separated {
                &LEADING_VALUE
            } else {
                &LEADING_SEP_VALUE
            };
            out = value.replace(&out, "${1}[redacted]").into_owned();
        }
        self.key_wrapped = TRAILING_KEY.captures(&out).map(|c| c.get(1).is_some());
        Some(out)
    }

    /// A piece of a line (text between the parts a caller shows itself), redacted
    /// with the PEM state carried over but no key carried to what follows: the
    /// caller's own layout, not a tool's wrapping, decides where pieces end.
    pub fn piece(&mut self, line: &str) -> Option<String> {
        let mut visible = String::new();
        // A line that starts inside a block shows only what follows its end.
        let started_outside = self.pem == Pem::Outside;
        let mut rest = line;
        loop {
            match self.pem {
                Pem::Outside => match rest.find("-----BEGIN") {
                    None => {
                        visible.push_str(rest);
                        break;
                    }
                    Some(i) => {
                        visible.push_str(&rest[..i]);
                        visible.push_str(PEM_MARK);
                        rest = &rest[i + "-----BEGIN".len()..];
                        self.pem = Pem::Inside;
                    }
                },
                Pem::Inside => match rest.find("-----END") {
                    None => break,
                    Some(i) => {
                        rest = &rest[i + "-----END".len()..];
                        self.pem = Pem::Closing(2);
                    }
                },
                Pem::Closing(lines_left) => match rest.find("-----") {
                    None => {
                        self.pem = if lines_left == 0 {
                            Pem::Outside
                        } else {
                            Pem::Closing(lines_left - 1)
                        };
                        break;
                    }
                    Some(i) => {
                        rest = &rest[i + "-----".len()..];
                        self.pem = Pem::Outside;
                    }
                },
            }
        }
        (started_outside || !visible.trim().is_empty())
            .then(|| redact_values(&visible, [&self.registered, &self.own]))
    }

    /// What the end of the stream adds: a note when a PEM block never ended.
    pub fn finish(self) -> Option<String> {
        (self.pem == Pem::Inside).then(|| format!("{PEM_MARK} (no END line: the rest is hidden)"))
    }

    /// True while the stream is inside a PEM block.
    pub fn in_pem_block(&self) -> bool {
        self.pem != Pem::Outside
    }
}

/// Files of the server's named once at start (the App's key file, the GitLab token
/// file), shown as their label wherever a [`ServerPaths`] with
/// [`ServerPaths::with_registered`] replaces paths.
static SERVER_FILES: std::sync::RwLock<Vec<(std::path::PathBuf, String)>> =
    std::sync::RwLock::new(Vec::new());

/// Registers `path` (a secret's file) to be shown as `shown_as` in what a pull
/// request sees.
pub fn register_server_path(path: &std::path::Path, shown_as: &str) {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut files = SERVER_FILES.write().unwrap_or_else(|p| p.into_inner());
    if !files.iter().any(|(p, _)| *p == path) {
        files.push((path, shown_as.to_string()));
    }
}

/// The server's own directories (the data directory, checkouts, run directories, the
/// home directory), replaced in text a pull request will show: a tool's output names
/// them freely (`-out=…`, a file's absolute path in an error, Terragrunt's cache), and
/// they must not reach the pull request. Each is replaced as given and as the file
/// system resolves it (a link in a temporary directory's path), longest first, so a
/// checkout inside the data directory becomes `.` rather than `<data-dir>/…`.
#[derive(Clone, Debug, Default)]
pub struct ServerPaths {
    /// (path, what it is shown as), longest path first.
    forms: Vec<(String, String)>,
}

impl ServerPaths {
    pub fn new() -> ServerPaths {
        ServerPaths::default()
    }

    /// Also replaces `path` (absolute; anything shorter than two components, like `/`
    /// or `/tmp`, is left alone, since it would match too much) with `shown_as`.
    pub fn with(self, path: &std::path::Path, shown_as: &str) -> ServerPaths {
        self.with_depth(path, shown_as, 2)
    }

    /// Also replaces the files registered with [`register_server_path`].
    pub fn with_registered(self) -> ServerPaths {
        let files = SERVER_FILES
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        files
            .iter()
            .fold(self, |paths, (path, shown_as)| paths.with(path, shown_as))
    }

    /// [`ServerPaths::with`] the server's home directory (`$HOME`) as `~`; one component
    /// is enough there (`/root`).
    pub fn with_home(self) -> ServerPaths {
        match std::env::var_os("HOME") {
            Some(home) => self.with_depth(std::path::Path::new(&home), "~", 1),
            None => self,
        }
    }

    fn with_depth(mut self, path: &std::path::Path, shown_as: &str, min: usize) -> ServerPaths {
        let resolved = std::fs::canonicalize(path).ok();
        for form in std::iter::once(path).chain(resolved.as_deref()) {
            let text = form.to_string_lossy();
            let text = text.trim_end_matches('/');
            let deep = text.starts_with('/') && text.matches('/').count() >= min;
            if deep && !self.forms.iter().any(|(p, _)| p == text) {
                self.forms.push((text.to_string(), shown_as.to_string()));
            }
        }
        self.forms
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        self
    }

    /// `text` with each of the paths replaced. A path counts only where it ends at a
    /// path boundary (`/data` is not replaced inside `/database`).
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (path, shown_as) in &self.forms {
            if !out.contains(path.as_str()) {
                continue;
            }
            let mut scrubbed = String::with_capacity(out.len());
            let mut rest = out.as_str();
            while let Some(at) = rest.find(path.as_str()) {
                let after = &rest[at + path.len()..];
                let boundary = after
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')));
                scrubbed.push_str(&rest[..at]);
                scrubbed.push_str(if boundary { shown_as } else { path });
                rest = after;
            }
            scrubbed.push_str(rest);
            out = scrubbed;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_value_wrapped_onto_the_next_line_is_removed() {
        // terraform wraps long diagnostics at word boundaries: after the key, or after `=`.
        for text in [
            "Error: bad value for db_password\n= hunter2-secret-value in module x",
            "Error: bad value for db_password =\nhunter2-secret-value in module x",
            "  \"api_key\":\n    \"hunter2-secret-value\"",
        ] {
            let out = redact(text);
            assert!(!out.contains("hunter2"), "{text:?} -> {out:?}");
            assert!(out.contains("[redacted]"), "{out}");
        }
        // A line ending with such a word and a next line without a separator: left alone.
        let out = redact("could not refresh the token\nbecause the network is down");
        assert_eq!(
            out,
            "could not refresh the token\nbecause the network is down"
        );
        // The carry lasts one line only.
        let out = redact("db_password\nnothing here\n= visible");
        assert!(out.ends_with("= visible"), "{out}");
    }

    #[test]
    fn server_paths_are_replaced_longest_first_at_path_boundaries() {
        let paths = ServerPaths::new()
            .with(std::path::Path::new("/srv/cascade"), "<data-dir>")
            .with(std::path::Path::new("/srv/cascade/workspaces/x/pr-1/"), ".")
            .with(std::path::Path::new("/"), "nothing")
            .with(std::path::Path::new("/srv"), "nothing");
        assert_eq!(
            paths.scrub("on /srv/cascade/workspaces/x/pr-1/dev/app/main.tf line 3; -out=/srv/cascade/runs/r/plans/a.tfplan /srv/cascade2 /srv/cascade"),
            "on ./dev/app/main.tf line 3; -out=<data-dir>/runs/r/plans/a.tfplan /srv/cascade2 <data-dir>"
        );
    }

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
            redact("Plan: 1 to add, 0 to change"),
            "Plan: 1 to add, 0 to change"
        );
    }

    #[test]
    fn url_user_info_goes() {
        assert_eq!(
            redact("dial postgres://admin:s3cret-pw@db.internal:5432/app failed"),
            "dial postgres://[redacted]@db.internal:5432/app failed"
        );
        assert_eq!(
            redact("https://x-access-token:ghs_abc@github.com/acme/infra.git"),
            "https://[redacted]@github.com/acme/infra.git"
        );
        assert_eq!(
            redact("see https://example.com/a@b"),
            "see https://example.com/a@b"
        );
    }

    #[test]
    fn a_pem_block_goes_whole_however_it_is_wrapped() {
        let heredoc = "  + private_key_pem = <<-EOT\n      -----BEGIN RSA PRIVATE KEY-----\n      MIIEpAIBAAKCAQEA1\n      abcdefgh\n      -----END RSA PRIVATE KEY-----\n  EOT\nPlan: 1 to add";
        assert_eq!(
            redact(heredoc),
            format!("  + private_key_pem = [redacted]\n      {PEM_MARK}\n  EOT\nPlan: 1 to add")
        );
        let escaped = r#"key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n" # tail"#;
        assert_eq!(redact(escaped), format!(r#"key = "{PEM_MARK}\n" # tail"#));
        // Word-wrapped inside a diagnostic box: the labels themselves are split.
        let wrapped = "│ value \"-----BEGIN OPENSSH\n│ PRIVATE KEY-----\n│ b3BlbnNzaC1rZXktdjEAAAAA\n│ -----END OPENSSH PRIVATE\n│ KEY-----\" is invalid\n│ next";
        assert_eq!(
            redact(wrapped),
            format!("│ value \"{PEM_MARK}\n\" is invalid\n│ next")
        );
        // A block that never ends hides the rest: fail closed.
        assert_eq!(
            redact("a\n-----BEGIN CERTIFICATE-----\nMIIB\nmore"),
            format!("a\n{PEM_MARK}\n{PEM_MARK} (no END line: the rest is hidden)")
        );
    }

    #[test]
    fn registered_and_own_secrets_go_but_short_ones_do_not() {
        register_secret("reg1st3red-webhook-secret");
        register_secret("short");
        let r = Redactor::with_secrets(["tfvar-value-123", "us"]);
        assert_eq!(
            r.redact("a reg1st3red-webhook-secret b tfvar-value-123 c short us"),
            "a [redacted] b [redacted] c short us"
        );
        assert_eq!(redact("tfvar-value-123"), "tfvar-value-123");
    }
}
