//! Where a stack's `unit` or `stack` block takes its files from: a directory of the
//! repository, or one of a fetched tree (mounted in the file index), and the problem that
//! makes it unknown otherwise (a remote source not fetched, not fetchable, refused, or of
//! a form cascade does not fetch).
//!
//! Owns: reading a block's `source` into a directory and naming a fetched tree in
//! problems. Never: fetches (the catalog does, between discoveries), or reads outside the
//! repository or the fetched tree.

use super::*;

/// Where a component's files come from.
pub(super) enum SourceDir {
    /// A directory of the repository.
    Local(String),
    /// A directory of a fetched tree, under its mount, and the source it was fetched as.
    Fetched { dir: String, used: SourceCommit },
}

/// A component's source directory, or the problem that makes it unknown
/// (a remote source not fetched, not fetchable, or of a form cascade does not fetch).
pub(super) fn source_dir(inst: &Instance<'_>, c: &Component<'_>) -> Result<SourceDir, Problem> {
    let located = |span, kind, message: String| {
        Problem::new(kind, message).at(c.file.path.clone(), c.file.line_of(span), None)
    };
    let kind = c.block.ident.as_str();
    let Some(attr) = c.block.body.get_attribute("source") else {
        return Err(located(
            c.block.span(),
            ProblemKind::Parse,
            format!(
                "{kind} \"{}\" has no `source`; add where it comes from",
                c.name
            ),
        ));
    };
    let source = string(inst, &attr.value, "source")
        .map_err(|m| located(attr.span(), ProblemKind::Unresolved, m))?;
    let (root, sub) = crate::terragrunt::reads::split_source(&source);
    let local = crate::terragrunt::reads::is_local_source(&source)
        || (!root.contains("::") && !root.contains("://") && !root.starts_with("git@"));
    if !local {
        return remote_dir(inst, c, &source).map_err(|(kind, m)| located(attr.span(), kind, m));
    }
    let dir = local
        .then(|| inst.s.resolve(&inst.tg_dir, root).ok())
        .flatten()
        .map(|r| paths::clean(&paths::join(&r, sub)).unwrap_or(r))
        .filter(|d| matches!(inst.s.fs.probe(d), Probe::Dir | Probe::Escapes));
    match dir {
        Some(dir) if inst.s.fs.probe(&dir) == Probe::Escapes => Err(located(
            attr.span(),
            ProblemKind::Unresolved,
            format!(
                "the source of {kind} \"{}\" leads through a symbolic link outside the repository; cascade reads nothing outside the repository",
                c.name
            ),
        )),
        // Not read by the stack: only the units generated from it read it.
        Some(dir) => Ok(SourceDir::Local(dir)),
        None if crate::terragrunt::reads::is_local_source(&source) => Err(located(
            attr.span(),
            ProblemKind::Parse,
            format!(
                "the source of {kind} \"{}\" is not a directory in the repository; fix the path {PLANNED_ON_EVERY_CHANGE}",
                c.name
            ),
        )),
        None => remote_dir(inst, c, &source).map_err(|(kind, m)| located(attr.span(), kind, m)),
    }
}

/// A remote source's directory in its fetched tree, or why there is none.
fn remote_dir(
    inst: &Instance<'_>,
    c: &Component<'_>,
    source: &str,
) -> Result<SourceDir, (ProblemKind, String)> {
    let kind = c.block.ident.as_str();
    let name = &c.name;
    let (cannot, advice) = if kind == "unit" {
        (
            "what this unit depends on or reads",
            format!(
                "to have it read, give the unit a source in the repository {PLANNED_ON_EVERY_CHANGE}"
            ),
        )
    } else {
        (
            "which units this stack generates and none of them is planned",
            "to have them planned, give the stack a source in the repository".to_string(),
        )
    };
    let unresolved = |m: String| Err((ProblemKind::Unresolved, m));
    let git = match remote_source::parse(source) {
        RemoteSource::Git(git) => git,
        RemoteSource::Unsupported { form } => {
            return unresolved(format!(
                "{kind} \"{name}\" has a source of a form cascade does not fetch ({form}; it fetches git repositories only), so it cannot tell {cannot}; {advice}"
            ));
        }
        RemoteSource::Invalid { why } => {
            return unresolved(format!(
                "the source of {kind} \"{name}\" is refused: {why}; so cascade cannot tell {cannot}; {advice}"
            ));
        }
    };
    let s = inst.s;
    let fetched = match s.sources.get(&git.key()) {
        Some(Ok(fetched)) => fetched,
        Some(Err(reason)) => {
            let planned = if kind == "unit" {
                PLANNED_ON_EVERY_CHANGE
            } else {
                ""
            };
            return unresolved(format!(
                "could not fetch {git} ({kind} \"{name}\"): {reason}; so cascade cannot tell {cannot}; fix the source or cascade's access to it {planned}"
            ).trim_end().to_string());
        }
        None => {
            let mut wanted = s.wanted.lock().unwrap_or_else(|p| p.into_inner());
            wanted.entry(git.key()).or_insert_with(|| git.clone());
            return unresolved(format!(
                "{kind} \"{name}\" has a remote source, {git}, that this discovery did not fetch, so cascade cannot tell {cannot}; {advice}"
            ));
        }
    };
    let Some(mount) = s.fs.mount(&fetched.dir, &tree_label(&git)) else {
        return unresolved(format!(
            "the fetched tree of {git} ({kind} \"{name}\") is gone from the cache; so cascade cannot tell {cannot}; plan again"
        ));
    };
    let dir = paths::join(&mount, git.subdir());
    match s.fs.probe(&dir) {
        Probe::Dir => Ok(SourceDir::Fetched {
            dir,
            used: SourceCommit {
                url: git.shown_url(),
                reference: git.reference().map(str::to_string),
                commit: fetched.commit.clone(),
            },
        }),
        Probe::Escapes => unresolved(format!(
            "the source of {kind} \"{name}\", {git}, leads through a symbolic link outside the fetched repository; cascade reads nothing outside it, so it cannot tell {cannot}; {advice}"
        )),
        _ => Err((
            ProblemKind::Parse,
            format!(
                "the source of {kind} \"{name}\", {git}, is not a directory of that repository at commit {}; fix the path {PLANNED_ON_EVERY_CHANGE}",
                fetched.commit
            ),
        )),
    }
}

/// What problems call a fetched tree: the repository and ref, without credentials
/// (`git::https://github.com/acme/catalog?ref=v1`); a path inside follows after `//`.
fn tree_label(git: &GitSource) -> String {
    match git.reference() {
        Some(reference) => format!("git::{}?ref={reference}", git.shown_url()),
        None => format!("git::{}", git.shown_url()),
    }
}
