//! Problems found while building the graph: what a user sees in `errors` of
//! `cascade graph --format json` and in the text output as `file:line: message`.

use crate::unit::UnitPath;
use serde::Serialize;
use std::fmt;

/// What kind of problem; the JSON spelling is part of the CLI contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A file does not parse as HCL (or YAML for `.cascade.yaml`).
    Parse,
    /// A dependency cycle; the message names the whole cycle.
    Cycle,
    /// A dependency points at a directory that does not exist or holds no unit.
    MissingDependency,
    /// An edge or read expression could not be computed without executing something.
    Unresolved,
    /// `.cascade.yaml` is wrong.
    Config,
    /// Two units have one path (a Terragrunt unit and a module of
    /// `.cascade.yaml`, say): both are reported, and cascade runs neither.
    DuplicateUnit,
}

/// One problem, located as precisely as cascade can: unit, file, line, column.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Problem {
    pub kind: ProblemKind,
    pub unit: Option<UnitPath>,
    pub file: Option<String>,
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    pub message: String,
}

/// How the message of a file cascade would not read begins (too large, not UTF-8, a link
/// out of the repository): cascade's limit, not a configuration Terragrunt refuses.
pub const CANNOT_READ: &str = "cascade cannot read this file";

/// How a message about a unit that fails in every plan ends, where one that is
/// merely unresolved says it is planned on every change.
pub const FAILS_EVERY_PLAN: &str =
    "(until then the unit fails to plan and its dependents are skipped)";

impl Problem {
    /// True when Terragrunt itself would refuse the unit this problem is about: its
    /// configuration (or a file it includes) does not parse, it names a dependency that is
    /// no unit (DependencyDirNotFoundError), or it is in a dependency cycle. Such a unit is
    /// failed in every plan, with this problem as its reason, and nothing runs for it; its
    /// dependents are skipped. A value cascade could not work out (`Unresolved`), a file
    /// cascade would not read ([`CANNOT_READ`]) and an edge of `.cascade.yaml` (the
    /// default branch's: a pull request cannot fix it) leave the unit planned.
    pub fn fails_unit(&self) -> bool {
        match self.kind {
            ProblemKind::Parse => !self.message.starts_with(CANNOT_READ),
            ProblemKind::Cycle => true,
            // `config::FILE_NAME`, spelled here: `config` sits a layer above problems.
            ProblemKind::MissingDependency => !self
                .file
                .as_deref()
                .is_some_and(|f| f.ends_with(".cascade.yaml")),
            _ => false,
        }
    }

    pub fn new(kind: ProblemKind, message: impl Into<String>) -> Problem {
        Problem {
            kind,
            unit: None,
            file: None,
            line: None,
            column: None,
            message: message.into(),
        }
    }

    pub fn unit(mut self, unit: &UnitPath) -> Problem {
        self.unit = Some(unit.clone());
        self
    }

    pub fn at(
        mut self,
        file: impl Into<String>,
        line: Option<u32>,
        column: Option<u32>,
    ) -> Problem {
        self.file = Some(file.into());
        self.line = line;
        self.column = column;
        self
    }
}

impl fmt::Display for Problem {
    /// `file:line:column: message`, the form editors and terminals make clickable.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(col) = self.column {
                    write!(f, ":{col}")?;
                }
            }
            write!(f, ": ")?;
        } else if let Some(unit) = &self.unit {
            write!(f, "{unit}: ")?;
        }
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_terragrunt_refuses_fails_the_unit_and_what_cascade_cannot_tell_does_not() {
        let at =
            |kind, file: &str, message: &str| Problem::new(kind, message).at(file, Some(2), None);
        assert!(at(ProblemKind::Parse, "a/terragrunt.hcl", "invalid expression").fails_unit());
        assert!(
            at(
                ProblemKind::MissingDependency,
                "a/terragrunt.hcl",
                "a depends on b"
            )
            .fails_unit()
        );
        assert!(at(ProblemKind::Cycle, "a/terragrunt.hcl", "dependency cycle").fails_unit());
        // cascade's own limits, the default branch's configuration, unknown values.
        let too_large = format!("{CANNOT_READ}: it is larger than cascade's limit");
        assert!(!at(ProblemKind::Parse, "a/terragrunt.hcl", &too_large).fails_unit());
        assert!(
            !at(
                ProblemKind::MissingDependency,
                ".cascade.yaml",
                "a depends on b"
            )
            .fails_unit()
        );
        assert!(!at(ProblemKind::Unresolved, "a/terragrunt.hcl", "unknown").fails_unit());
        assert!(!at(ProblemKind::Config, ".cascade.yaml", "bad").fails_unit());
    }
}
