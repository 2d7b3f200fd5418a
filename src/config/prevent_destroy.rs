//! `prevent_destroy:` in `.cascade.yaml`: the units cascade never destroys, as globs over
//! unit paths (platctl's `teardown_skip`). Owns the check of the written globs (located,
//! like every config error) and which glob, at which line, protects a unit. Never decides
//! what is refused: the bot refuses a `/destroy` of a protected unit, and the apply of a
//! plan that would destroy one (a unit the pull request deletes).

use super::validate::compile_globs;
use super::{CompiledGlobs, FILE_NAME};
use crate::problem::Problem;
use crate::unit::UnitPath;
use globset::GlobBuilder;
use serde_saphyr::Spanned;

/// The `prevent_destroy` globs, each with the line of `.cascade.yaml` it is on.
#[derive(Clone, Debug, Default)]
pub struct PreventDestroy {
    globs: CompiledGlobs,
    lines: Vec<u64>,
}

/// Why a unit is protected: the glob that matches it, as written (without `./`), and
/// its line in `.cascade.yaml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protection {
    pub glob: String,
    pub line: u64,
}

impl Protection {
    /// Where it is written: "`.cascade.yaml` line 12".
    pub fn place(&self) -> String {
        format!("`{FILE_NAME}` line {}", self.line)
    }
}

impl PreventDestroy {
    /// True when no unit is protected.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The first glob, in file order, that protects `unit`, if one does. A glob matches a
    /// unit's path as `/apply <id> unit…` matches (`*` within a directory, `**` across).
    pub fn protecting(&self, unit: &UnitPath) -> Option<Protection> {
        if !self.globs.set.is_match(unit.as_str()) {
            return None;
        }
        self.globs
            .patterns
            .iter()
            .zip(&self.lines)
            .find(|(pattern, _)| {
                GlobBuilder::new(pattern)
                    .literal_separator(true)
                    .build()
                    .is_ok_and(|g| g.compile_matcher().is_match(unit.as_str()))
            })
            .map(|(glob, line)| Protection {
                glob: glob.clone(),
                line: *line,
            })
    }
}

/// `prevent_destroy:` as written, checked.
pub(super) fn prevent_destroy(globs: &[Spanned<String>]) -> Result<PreventDestroy, Problem> {
    Ok(PreventDestroy {
        globs: compile_globs("prevent_destroy", globs)?,
        lines: globs.iter().map(|g| g.referenced.line()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use crate::config::RepoConfig;
    use crate::unit::UnitPath;

    #[test]
    fn the_first_matching_glob_protects_a_unit_and_names_its_line() {
        let config = RepoConfig::parse(
            "environments:\n  prod: prod\nprevent_destroy:\n  - global/*\n  - ./prod/**\n",
        )
        .unwrap();
        let found = config
            .prevent_destroy
            .protecting(&UnitPath::new("prod/dns"))
            .unwrap();
        assert_eq!((found.glob.as_str(), found.line), ("prod/**", 5));
        assert_eq!(found.place(), "`.cascade.yaml` line 5");
        let global = config
            .prevent_destroy
            .protecting(&UnitPath::new("global/dns"))
            .unwrap();
        assert_eq!(global.line, 4);
        // `*` stays within one directory.
        assert!(
            config
                .prevent_destroy
                .protecting(&UnitPath::new("global/dns/zone"))
                .is_none()
        );
        assert!(
            config
                .prevent_destroy
                .protecting(&UnitPath::new("dev/dns"))
                .is_none()
        );
    }

    #[test]
    fn nothing_is_protected_by_default_and_a_bad_glob_is_located() {
        assert!(RepoConfig::default().prevent_destroy.is_empty());
        let err = RepoConfig::parse("prevent_destroy:\n  - \"prod/[\"\n").unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
        assert!(err.message.contains("prevent_destroy"), "{err}");
        let err = RepoConfig::parse("prevent_destroy: prod\n").unwrap_err();
        assert!(err.message.contains("prevent_destroy"), "{err}");
    }
}
