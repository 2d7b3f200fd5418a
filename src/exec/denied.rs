//! Telling a sandbox refusal from any other failure, and naming what was
//! refused by its class ("cascade's database", "another pull request's
//! checkout"), never by the server's real path.
//!
//! Tools report a refused access as `open /path: permission denied`, the
//! system call's name, the path (relative to their working directory when it
//! was written so) and the error, and terraform wraps long lines, so a line is
//! read together with the two before it.

use regex::Regex;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// `open /x: permission denied`, `stat "/x": operation not permitted`,
/// `cat: /x: Permission denied`: the call (if named) and the path.
static REFUSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?:\b(open|openat|stat|lstat|read|readlink|readdirent|mkdir|mkdirat|remove|unlink|unlinkat|rename|renameat|symlink|link|chmod|write|create|truncate|fork/exec|exec)\s+)?["']?((?:/|\.\.?/)[^\s:"']*)["']?\s*:\s*(?:permission\s+denied|operation\s+not\s+permitted)"#,
    )
    .expect("a valid pattern")
});

/// What the sandbox refused a command, as a pull request may be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// "reading", "writing", "running" or "reaching".
    pub verb: &'static str,
    /// The path's class: "cascade's database", "a path outside the checkout".
    pub what: String,
}

/// The first refused access in a command's output, read line by line.
#[derive(Debug, Default)]
pub(super) struct RefusalWatch {
    /// The two lines before, oldest first.
    previous: [String; 2],
    found: Option<(&'static str, PathBuf)>,
}

impl RefusalWatch {
    /// Looks at the next line of output.
    pub fn line(&mut self, line: &str) {
        if self.found.is_none() {
            let lower = line.to_ascii_lowercase();
            if lower.contains("denied") || lower.contains("not permitted") {
                let joined = format!("{} {} {line}", self.previous[0], self.previous[1]);
                if let Some(m) = REFUSED.captures(&joined) {
                    let verb = verb(m.get(1).map_or("", |c| c.as_str()));
                    self.found = Some((verb, PathBuf::from(&m[2])));
                }
            }
        }
        self.previous.swap(0, 1);
        self.previous[1].clear();
        self.previous[1].push_str(line);
    }

    /// The refused path, if any, and how it was used.
    pub fn found(&self) -> Option<(&'static str, &Path)> {
        self.found.as_ref().map(|(v, p)| (*v, p.as_path()))
    }
}

fn verb(call: &str) -> &'static str {
    match call.to_ascii_lowercase().as_str() {
        "open" | "openat" | "stat" | "lstat" | "read" | "readlink" | "readdirent" => "reading",
        "fork/exec" | "exec" => "running",
        "" => "reaching",
        _ => "writing",
    }
}

/// The class of `path` (relative to `cwd` unless absolute): the label of the
/// longest of `known` it lies under, else what it generally is.
pub(super) fn class_of(path: &Path, cwd: &Path, known: &[(PathBuf, &'static str)]) -> String {
    let path = &lexical(&cwd.join(path));
    let best = known
        .iter()
        .filter(|(p, _)| path.starts_with(p))
        .max_by_key(|(p, _)| p.as_os_str().len());
    if let Some((_, label)) = best {
        return (*label).to_string();
    }
    if path.starts_with("/proc") {
        return "another process's files (/proc)".into();
    }
    if std::env::var_os("HOME").is_some_and(|home| path.starts_with(home)) {
        return "the home directory".into();
    }
    "a path outside the checkout".into()
}

/// `path` with its `.` and `..` parts worked out by name (a tool reports the
/// path as it was written: `<checkout>/live/app/../../../pr-2/…`).
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(text: &str) -> Option<(&'static str, PathBuf)> {
        let mut w = RefusalWatch::default();
        for line in text.lines() {
            w.line(line);
        }
        w.found().map(|(v, p)| (v, p.to_path_buf()))
    }

    #[test]
    fn terraform_and_shell_refusals_are_found_even_when_wrapped() {
        let terraform =
            "Invalid value for \"path\" parameter: open /proc/1102/environ: permission\ndenied.";
        assert_eq!(
            watch(terraform),
            Some(("reading", PathBuf::from("/proc/1102/environ")))
        );
        assert_eq!(
            watch("Error: failed to write: mkdir /data/runs/x: permission denied"),
            Some(("writing", PathBuf::from("/data/runs/x")))
        );
        assert_eq!(
            watch("cat: /data/cascade.db: Permission denied"),
            Some(("reaching", PathBuf::from("/data/cascade.db")))
        );
        assert_eq!(
            watch("fork/exec /data/x/provider: permission denied"),
            Some(("running", PathBuf::from("/data/x/provider")))
        );
        assert_eq!(
            watch("parameter: open\n/data/a/very/long/path:\npermission denied."),
            Some(("reading", PathBuf::from("/data/a/very/long/path")))
        );
        assert_eq!(
            watch("open ../../.cascade/cascade.db:\npermission denied."),
            Some(("reading", PathBuf::from("../../.cascade/cascade.db")))
        );
        assert_eq!(
            class_of(Path::new("../../x.db"), Path::new("/data/ws/live/app"), &[]),
            "a path outside the checkout"
        );
        assert_eq!(watch("Error: Unsupported argument\nno such file"), None);
        assert_eq!(watch("Error: access denied by the cloud"), None);
    }

    fn class_of_abs(path: &Path, known: &[(PathBuf, &'static str)]) -> String {
        class_of(path, Path::new("/elsewhere"), known)
    }

    #[test]
    fn the_longest_known_path_names_the_class() {
        let known = [
            (PathBuf::from("/data"), "cascade's data directory"),
            (PathBuf::from("/data/cascade.db"), "cascade's database"),
        ];
        assert_eq!(
            class_of_abs(Path::new("/data/cascade.db"), &known),
            "cascade's database"
        );
        assert_eq!(
            class_of_abs(Path::new("/data/runs"), &known),
            "cascade's data directory"
        );
        assert_eq!(
            class_of_abs(Path::new("/database"), &known),
            "a path outside the checkout"
        );
        assert_eq!(
            class_of_abs(Path::new("/data/runs/../cascade.db"), &known),
            "cascade's database"
        );
        assert_eq!(
            class_of_abs(Path::new("/proc/1/environ"), &known),
            "another process's files (/proc)"
        );
    }
}
