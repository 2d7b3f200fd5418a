//! Repository-relative path arithmetic. Paths inside cascade are relative to the
//! repository root, `/`-separated, with "" for the root itself; the evaluator
//! hands absolute paths to HCL (as Terragrunt does) and maps them back here,
//! refusing anything that leaves the repository.
//!
//! Lexical only: symbolic links are the file index's business (`fs`), which
//! resolves every path it reads against the real repository root.

/// Joins `path` (absolute, or relative to `base`) and cleans it lexically.
/// Returns the repo-relative result, or an error if it leaves the repository.
/// The error never repeats the path: it may hold the server's absolute paths
/// (`get_repo_root()`) or a file's contents.
pub fn resolve(root_abs: &str, base: &str, path: &str) -> Result<String, String> {
    let joined = if let Some(rest) = strip_root(root_abs, path) {
        rest.to_string()
    } else if path.starts_with('/') {
        return Err(
            "the path is an absolute path outside the repository (cascade reads nothing outside the repository; use a path inside it)"
                .to_string(),
        );
    } else if base.is_empty() {
        path.to_string()
    } else {
        join(base, path)
    };
    clean(&joined).ok_or_else(|| {
        "the path climbs above the repository root with `..` (cascade reads nothing outside the repository; use a path inside it)"
            .to_string()
    })
}

fn strip_root<'p>(root_abs: &str, path: &'p str) -> Option<&'p str> {
    let rest = path.strip_prefix(root_abs)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// Lexical clean: drops `.` and empty components, applies `..`; None if it climbs above the root.
pub fn clean(path: &str) -> Option<String> {
    // Most paths are clean already (discovery cleans millions): copy them as
    // they are. An empty part needs a leading, trailing or doubled slash; a
    // `.` or `..` part, a dot at the start of a part.
    let has_empty_part =
        path.is_empty() || path.starts_with('/') || path.ends_with('/') || path.contains("//");
    let has_dot_part = (path.starts_with('.') || path.contains("/."))
        && path.split('/').any(|part| matches!(part, "." | ".."));
    if !has_empty_part && !has_dot_part {
        return Some(path.to_string());
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The absolute form of a repo-relative path.
pub fn absolute(root_abs: &str, rel: &str) -> String {
    if rel.is_empty() {
        root_abs.to_string()
    } else {
        concat(root_abs, rel)
    }
}

/// The directory holding `rel` ("" for a top-level entry).
pub fn parent(rel: &str) -> &str {
    match rel.rfind('/') {
        Some(i) => &rel[..i],
        None => "",
    }
}

/// Joins a repo-relative directory and a name.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        concat(dir, name)
    }
}

/// `a/b`, without the formatting machinery (paths are joined very often).
fn concat(a: &str, b: &str) -> String {
    let mut joined = String::with_capacity(a.len() + 1 + b.len());
    joined.push_str(a);
    joined.push('/');
    joined.push_str(b);
    joined
}

/// The relative path that leads from directory `from` to `to` (both repo-relative), "." when equal.
pub fn relative(from: &str, to: &str) -> String {
    let f: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    let t: Vec<&str> = to.split('/').filter(|s| !s.is_empty()).collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = std::iter::repeat_n("..", f.len() - common).collect();
    parts.extend(&t[common..]);
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// `dir` as shown to people: `.` for the root.
pub fn display_dir(dir: &str) -> &str {
    if dir.is_empty() { "." } else { dir }
}

/// True when `path` lies inside directory `dir` (or is it).
pub fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The shortcut for clean paths answers as cleaning every path would.
        #[test]
        fn clean_as_cleaning_every_part(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["", ".", "..", "a", "b", ".a", "a.", "..a", "a..", "..."]),
                0..6,
            )
        ) {
            let path = parts.join("/");
            let mut kept: Vec<&str> = Vec::new();
            let mut escapes = false;
            for part in path.split('/') {
                match part {
                    "" | "." => {}
                    ".." => escapes |= kept.pop().is_none(),
                    p => kept.push(p),
                }
            }
            let expected = (!escapes).then(|| kept.join("/"));
            proptest::prop_assert_eq!(clean(&path), expected, "{:?}", path);
        }
    }

    #[test]
    fn resolves_relative_and_absolute() {
        assert_eq!(resolve("/r", "a/b", "../c").unwrap(), "a/c");
        assert_eq!(resolve("/r", "a/b", "/r/x/../y").unwrap(), "y");
        assert_eq!(resolve("/r", "", "/r").unwrap(), "");
        assert!(resolve("/r", "a", "../../x").is_err());
        assert!(resolve("/r", "a", "/etc/passwd").is_err());
        assert!(resolve("/r", "a", "/rx/y").is_err());
    }

    #[test]
    fn relative_paths() {
        assert_eq!(relative("a/b", "a/c/d"), "../c/d");
        assert_eq!(relative("", "a"), "a");
        assert_eq!(relative("a/b", ""), "../..");
        assert_eq!(relative("a", "a"), ".");
    }

    #[test]
    fn within() {
        assert!(is_within("a/b/c", "a/b"));
        assert!(!is_within("a/bc", "a/b"));
        assert!(is_within("x", ""));
    }
}
