//! `UnitGlob`: a unit argument of `/plan unit…`, `/apply <id> unit…` and `/destroy unit…`,
//! a glob over unit paths (`*` within a directory, `**` across, as in `.cascade.yaml`).
//! Owns what such an argument may be, reading a command's unit arguments into globs
//! (`unit_globs`), and which unit paths one matches; never knows which units a plan or a
//! pull request has.

use crate::unit::UnitPath;
use globset::GlobBuilder;

/// A glob over unit paths, as typed (an exact path is a glob that matches only itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitGlob(String);

impl UnitGlob {
    /// `text` as a glob, or globset's reason it is none.
    pub(super) fn new(text: &str) -> Result<UnitGlob, String> {
        let glob = UnitGlob(text.to_string());
        glob.compiled().map(|_| glob)
    }

    fn compiled(&self) -> Result<globset::GlobMatcher, String> {
        GlobBuilder::new(&self.0)
            .literal_separator(true)
            .build()
            .map(|glob| glob.compile_matcher())
            .map_err(|e| e.kind().to_string())
    }

    /// True when `unit` is a path this glob matches. Without a pattern character it is an
    /// exact path, compared as written (globset would read a backslash in it as an escape).
    pub fn matches(&self, unit: &UnitPath) -> bool {
        if !self.0.contains(super::PATTERN_CHARS) {
            return self.0 == unit.as_str();
        }
        self.compiled()
            .is_ok_and(|glob| glob.is_match(unit.as_str()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for UnitGlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The unit arguments of `command` as globs, each once: an exact path is read as `/plan`
/// reads it (`./dev/vpc/` is `dev/vpc`), a pattern as typed.
pub(super) fn unit_globs(
    command: &'static str,
    args: &[&str],
) -> Result<Vec<UnitGlob>, super::Mistake> {
    let mut units: Vec<UnitGlob> = Vec::new();
    for arg in args {
        let checked = super::checked_path(command, arg)?;
        let text = if arg.contains(super::PATTERN_CHARS) {
            arg.to_string()
        } else {
            checked.as_str().to_string()
        };
        let glob = UnitGlob::new(&text).map_err(|problem| super::Mistake::BadUnitGlob {
            command,
            glob: arg.to_string(),
            problem,
        })?;
        if !units.contains(&glob) {
            units.push(glob);
        }
    }
    Ok(units)
}
