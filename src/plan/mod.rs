//! Plan summaries, plan fingerprints and plan ids, from `terraform show -json`.
//!
//! This module owns reading one unit's plan — the JSON that `terraform show -json <planfile>`
//! (or `tofu show -json`) prints — and reducing it to a [`PlanSummary`]: counts, the changed
//! resources with their action labels, the changed outputs, and the plan's [`Fingerprint`].
//! Over all the units of a pull request it computes the [`PlanId`], the hash a reviewer types
//! after `/apply`. The [`render`] submodule draws the same JSON as `terraform plan` draws it,
//! for reviewers.
//!
//! Outside [`render`] it must never let a value out. Attribute and output values, sensitive or
//! not, go into the fingerprint's hash input and nowhere else: not into the summary, not into
//! an error message, not into a log. [`render`] shows values that are not sensitive, and only
//! in the text it returns (which the engine stores with the plan and the comment shows). The plan JSON is only ever held in memory.
//!
//! # Counting
//!
//! Each entry of the plan's `resource_changes` counts by its `change.actions`:
//!
//! | actions                                      | counts as | label             |
//! |----------------------------------------------|-----------|-------------------|
//! | `["create"]`                                 | add       | `create`          |
//! | `["update"]`                                 | change    | `update`          |
//! | `["delete"]`                                 | destroy   | `delete`          |
//! | `["delete","create"]`, `["create","delete"]` | replace   | `replace`         |
//! | `["read"]` (data sources read during apply)  | read      | `read`            |
//! | `["forget"]` (a `removed` block)             | forget    | `forget`          |
//! | `["create","forget"]`                        | add, forget | `create`, `forget` |
//! | `["no-op"]`                                  | nothing   | none              |
//!
//! A replace counts only as a replace, not also as an add and a destroy. On top of its action,
//! a resource being imported (`change.importing`) counts as an import and is labelled `import`,
//! and a resource being moved (`previous_address`) counts as a move and is labelled `move`, so
//! `aws_instance.b` may read `update, import, move`. A no-op that is neither imported nor moved
//! is left out of the summary. `resource_drift` is ignored: drift is what changed outside
//! Terraform, not what the plan would do. Outputs count by their `actions` (`create`, `update`
//! or `delete`; no-ops are left out). A plan with actions cascade does not know is refused
//! rather than guessed at.
//!
//! # What goes into the fingerprint
//!
//! The fingerprint is the lowercase hex SHA-256 of the JSON Canonicalization Scheme
//! (RFC 8785) form of a document built from only what the plan would do:
//!
//! ```json
//! { "resource_changes": [ ... ], "output_changes": [ ... ] }
//! ```
//!
//! - `resource_changes`: one entry per resource change that is not a plain no-op (a no-op that
//!   imports or moves a resource is included), sorted by address, then deposed key. Each entry
//!   holds these fields, copied unchanged from the plan (a missing field is `null`):
//!   - `address`, `previous_address`, `mode`, `type`, `name`, `index`, `deposed`,
//!     `provider_name`;
//!   - `change`, holding `actions`, `before`, `after`, `after_unknown`, `before_sensitive`,
//!     `after_sensitive`, `replace_paths` and `importing`.
//! - `output_changes`: one entry per output whose actions are not `["no-op"]`, sorted by name,
//!   holding `name`, `actions`, `before`, `after`, `after_unknown`, `before_sensitive` and
//!   `after_sensitive`.
//!
//! Everything else is left out, so two plans with the same effect have the same fingerprint
//! whatever machine, directory, time or tool version made them. Left out in particular:
//! `format_version`, `terraform_version`, `timestamp`, `applyable`, `complete`, `errored`,
//! `variables`, `planned_values`, `prior_state`, `configuration`, `relevant_attributes`,
//! `checks`, `resource_drift`, and per resource `action_reason`, `module_address` and
//! `change.generated_config`.
//!
//! A plan that changes nothing hashes the document with two empty lists; that fingerprint is
//! [`Fingerprint::empty()`].
//!
//! Values go into the hash input, sensitive ones included: a changed secret is a changed plan.
//! Numbers are hashed as `serde_json` reads them: integers within 64 bits exactly, others as
//! the nearest double.

pub mod render;
mod show_json;

use crate::inert::code;
use crate::unit::UnitPath;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::LazyLock;

/// How many changes of each kind a plan makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub add: u32,
    pub change: u32,
    pub destroy: u32,
    pub replace: u32,
    pub import: u32,
    #[serde(rename = "move")]
    pub moved: u32,
    pub forget: u32,
    pub read: u32,
}

/// One resource the plan touches, with its action labels in display order:
/// the action (create, update, delete, replace, read, forget) then import, move.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub address: String,
    pub actions: Vec<String>,
    /// For a replacement: the top-level attributes whose change forces it (the first step
    /// of each of the plan's `replace_paths`), sorted. Attribute names come from the
    /// provider's schema, never from a value; deeper steps (list indexes, map keys) are
    /// left out, since a map key can be data. Empty for summaries stored before cascade
    /// kept them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forced_by: Vec<String>,
}

/// One output the plan changes: create, update or delete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputChange {
    pub name: String,
    pub action: String,
}

/// SHA-256 (hex) of the canonical form of what a plan would do.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(String);

/// The id a reviewer approves: `/apply <id>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlanId(String);

/// What one unit's plan would do. Holds no attribute values: sensitive or not,
/// values never leave this module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanSummary {
    pub counts: Counts,
    pub resources: Vec<ResourceChange>,
    pub outputs: Vec<OutputChange>,
    pub fingerprint: Fingerprint,
}

/// Why a plan's JSON could not be summarised. The messages never quote the plan's values.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The bytes are not JSON at all.
    #[error(
        "the plan is not valid JSON ({0}); cascade reads the output of \
         `terraform show -json <planfile>`, check that nothing else was written to stdout"
    )]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not a plan: no `format_version`, or a state instead of a plan.
    #[error(
        "this JSON is not a plan ({reason}); cascade reads the output of \
         `terraform show -json <planfile>` run on a saved plan file"
    )]
    NotAPlan { reason: &'static str },
    /// A plan format whose major version cascade does not read.
    #[error(
        "plan JSON format_version {version} is not supported: cascade reads format 1.x \
         (Terraform 1.x, OpenTofu); use a release that writes format 1.x or upgrade cascade"
    )]
    UnsupportedFormat { version: String },
    /// Terraform marked the plan as errored: it could not finish planning.
    #[error(
        "the plan is marked as errored: Terraform could not finish planning; \
         fix the errors shown in the plan log and plan again"
    )]
    Errored,
    /// A field that a plan always has is missing or has the wrong type.
    #[error(
        "unexpected plan JSON: `{path}` should be {expected}; is this the output of \
         `terraform show -json <planfile>`?"
    )]
    Unexpected {
        path: String,
        expected: &'static str,
    },
    /// A resource or output change with actions cascade does not know.
    #[error(
        "`{address}` has the actions {actions:?}, which cascade does not know; \
         upgrade cascade or plan with a Terraform release it supports"
    )]
    UnknownActions {
        address: String,
        actions: Vec<String>,
    },
    /// The canonical form of the plan could not be written (a number JCS cannot represent).
    #[error("the plan could not be put in canonical form for its fingerprint: {0}")]
    Canonical(#[source] serde_json::Error),
}

impl PlanSummary {
    /// Summarises `terraform show -json <planfile>` output (bytes held in memory only).
    ///
    /// Counts and labels follow the rules in the [module docs](self), and so does the
    /// fingerprint. Refuses errored plans, state documents, format versions other than 1.x
    /// and actions cascade does not know.
    pub fn from_show_json(json: &[u8]) -> Result<PlanSummary, PlanError> {
        PlanSummary::of(&PlanDocument::parse(json)?)
    }

    /// [`PlanSummary::from_show_json`] of a document parsed once for the summary and the
    /// rendering both.
    pub fn of(plan: &PlanDocument) -> Result<PlanSummary, PlanError> {
        show_json::summarise(&plan.0)
    }

    /// True when the plan changes nothing: no resource change other than no-op, no output
    /// change, no import, no move, no forget.
    pub fn is_empty(&self) -> bool {
        // Imports, moves and forgets are always listed in `resources`, with their label.
        self.resources.is_empty() && self.outputs.is_empty()
    }
}

/// `terraform show -json <planfile>` output parsed once, accepted as a finished 1.x plan.
/// The summary (with its fingerprint) and the rendering each make one pass over it; its
/// values never leave the `plan` module but through the masked rendering.
pub struct PlanDocument(serde_json::Value);

impl PlanDocument {
    /// Parses `json`; refuses errored plans, state documents and format versions other than 1.x.
    pub fn parse(json: &[u8]) -> Result<PlanDocument, PlanError> {
        show_json::plan_document(json).map(PlanDocument)
    }
}

impl fmt::Debug for PlanDocument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values stay out of debug output too.
        f.write_str("PlanDocument(..)")
    }
}

impl Fingerprint {
    /// A fingerprint read back from where cascade stored it: only ever one it computed.
    pub fn from_stored(text: String) -> Fingerprint {
        Fingerprint(text)
    }

    /// The first 12 hex characters, as shown in the plan comment.
    pub fn short(&self) -> &str {
        self.0.get(..12).unwrap_or(&self.0)
    }

    /// The fingerprint of a plan that changes nothing: the hash of the document with no
    /// resource changes and no output changes.
    pub fn empty() -> Fingerprint {
        static EMPTY: LazyLock<Fingerprint> = LazyLock::new(|| {
            show_json::fingerprint_of(&show_json::empty_document())
                .expect("the empty document has a canonical form")
        });
        EMPTY.clone()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The document hashed into a plan id; the field names are part of the id's definition.
#[derive(Serialize)]
struct PlanIdInput<'a> {
    head: &'a str,
    base: &'a str,
    units: Vec<PlanIdUnit<'a>>,
}

#[derive(Serialize)]
struct PlanIdUnit<'a> {
    unit: &'a str,
    fingerprint: &'a str,
}

impl PlanId {
    /// The fixed id of a plan in which no unit changes anything; documented, hex, 12 chars.
    /// Such a plan needs no approval.
    pub const NO_CHANGES: &str = "000000000000";

    /// Short hex digest (first 12 hex chars of SHA-256) over head commit, base commit and the
    /// ordered (unit, fingerprint) list; [`PlanId::NO_CHANGES`] when every fingerprint is
    /// [`Fingerprint::empty()`] (or the list is empty).
    ///
    /// The digest is taken over the RFC 8785 canonical JSON of
    /// `{"head": …, "base": …, "units": [{"unit": …, "fingerprint": …}, …]}`, units in the
    /// order given (the order they were planned in), so reordering the units, or planning
    /// them at another commit, gives another id.
    pub fn compute(head: &str, base: &str, units: &[(UnitPath, Fingerprint)]) -> PlanId {
        let empty = Fingerprint::empty();
        if units.iter().all(|(_, fingerprint)| *fingerprint == empty) {
            return PlanId(PlanId::NO_CHANGES.to_string());
        }
        let input = PlanIdInput {
            head,
            base,
            units: units
                .iter()
                .map(|(unit, fingerprint)| PlanIdUnit {
                    unit: unit.as_str(),
                    fingerprint: fingerprint.as_str(),
                })
                .collect(),
        };
        let canonical =
            serde_jcs::to_vec(&input).expect("a document of strings has a canonical form");
        let digest = hex::encode(Sha256::digest(&canonical));
        PlanId(digest[..12].to_string())
    }

    /// An id read back from where cascade stored it: only ever one it computed or
    /// [`PlanId::parse`] accepted. What a user typed goes through `parse`.
    pub fn from_stored(text: String) -> PlanId {
        PlanId(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the id of a plan that changes nothing.
    pub fn is_no_changes(&self) -> bool {
        self.0 == PlanId::NO_CHANGES
    }

    /// Parses what a user typed after `/apply`: trims, lowercases, accepts 12 to 64 hex
    /// characters. The error says what a valid id looks like.
    pub fn parse(text: &str) -> Result<PlanId, String> {
        const LOOKS_LIKE: &str = "a plan id is the 12 hexadecimal characters (0-9, a-f) \
                                  shown in the plan comment, as in `/apply 3f9a2c1b7d4e`";
        let id = text.trim().to_ascii_lowercase();
        if id.is_empty() {
            return Err(format!("the plan id is missing: {LOOKS_LIKE}"));
        }
        let shown: String = if id.chars().count() > 70 {
            id.chars().take(64).chain("…".chars()).collect()
        } else {
            id.clone()
        };
        // What was typed is quoted inert: `/apply x`@team` must not ping the team back.
        let shown = code(&shown);
        if let Some(bad) = id.chars().find(|c| !c.is_ascii_hexdigit()) {
            let bad = match bad {
                ' ' => "a space".to_string(),
                bad => code(&bad.to_string()),
            };
            return Err(format!(
                "{shown} is not a plan id: {bad} is not a hexadecimal digit; {LOOKS_LIKE}"
            ));
        }
        if id.len() < 12 {
            return Err(format!(
                "{shown} is too short for a plan id ({} characters); {LOOKS_LIKE}",
                id.len()
            ));
        }
        if id.len() > 64 {
            return Err(format!(
                "{shown} is too long for a plan id ({} characters); {LOOKS_LIKE}",
                id.len()
            ));
        }
        Ok(PlanId(id))
    }
}

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(c: char) -> Fingerprint {
        Fingerprint(c.to_string().repeat(64))
    }

    fn units(list: &[(&str, Fingerprint)]) -> Vec<(UnitPath, Fingerprint)> {
        list.iter()
            .map(|(u, f)| (UnitPath::new(u), f.clone()))
            .collect()
    }

    #[test]
    fn plan_id_is_twelve_hex_characters() {
        let id = PlanId::compute("head", "base", &units(&[("a", fp('1'))]));
        assert_eq!(id.as_str().len(), 12);
        assert!(id.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id.to_string(), id.as_str());
        assert!(!id.is_no_changes());
    }

    #[test]
    fn plan_id_is_deterministic() {
        let list = units(&[("a", fp('1')), ("b", fp('2'))]);
        assert_eq!(
            PlanId::compute("h", "b", &list),
            PlanId::compute("h", "b", &list)
        );
    }

    #[test]
    fn plan_id_depends_on_unit_order() {
        let ab = units(&[("a", fp('1')), ("b", fp('2'))]);
        let ba = units(&[("b", fp('2')), ("a", fp('1'))]);
        assert_ne!(
            PlanId::compute("h", "b", &ab),
            PlanId::compute("h", "b", &ba)
        );
    }

    #[test]
    fn plan_id_depends_on_head_and_base() {
        let list = units(&[("a", fp('1'))]);
        let id = PlanId::compute("h1", "b1", &list);
        assert_ne!(id, PlanId::compute("h2", "b1", &list));
        assert_ne!(id, PlanId::compute("h1", "b2", &list));
        // Swapping head and base is a different plan too.
        assert_ne!(
            PlanId::compute("x", "y", &list),
            PlanId::compute("y", "x", &list)
        );
    }

    #[test]
    fn plan_id_depends_on_units_and_fingerprints() {
        let id = PlanId::compute("h", "b", &units(&[("a", fp('1'))]));
        assert_ne!(id, PlanId::compute("h", "b", &units(&[("c", fp('1'))])));
        assert_ne!(id, PlanId::compute("h", "b", &units(&[("a", fp('2'))])));
        // A unit with an empty plan is still part of the id when another unit changes.
        assert_ne!(
            id,
            PlanId::compute(
                "h",
                "b",
                &units(&[("a", fp('1')), ("z", Fingerprint::empty())])
            )
        );
    }

    #[test]
    fn plan_id_does_not_confuse_field_boundaries() {
        // Moving characters between unit and fingerprint, or between head and base,
        // must not give the same input.
        let a = PlanId::compute("ab", "c", &units(&[("u", fp('1'))]));
        let b = PlanId::compute("a", "bc", &units(&[("u", fp('1'))]));
        assert_ne!(a, b);
    }

    #[test]
    fn plan_id_of_nothing_to_do_is_fixed() {
        assert_eq!(PlanId::compute("h", "b", &[]).as_str(), PlanId::NO_CHANGES);
        let all_empty = units(&[("a", Fingerprint::empty()), ("b", Fingerprint::empty())]);
        let id = PlanId::compute("h", "b", &all_empty);
        assert_eq!(id.as_str(), "000000000000");
        assert!(id.is_no_changes());
        // Whatever the commits.
        assert_eq!(PlanId::compute("other", "commits", &all_empty), id);
    }

    #[test]
    fn empty_fingerprint_is_stable_and_short_is_a_prefix() {
        let empty = Fingerprint::empty();
        assert_eq!(empty, Fingerprint::empty());
        assert_eq!(empty.as_str().len(), 64);
        assert_eq!(empty.short().len(), 12);
        assert!(empty.as_str().starts_with(empty.short()));
        assert_eq!(empty.to_string(), empty.as_str());
        assert_eq!(Fingerprint("abc".into()).short(), "abc");
    }

    #[test]
    fn parse_accepts_ids_as_typed() {
        assert_eq!(
            PlanId::parse("3f9a2c1b7d4e").unwrap().as_str(),
            "3f9a2c1b7d4e"
        );
        assert_eq!(
            PlanId::parse("  3F9A2C1B7D4E\n").unwrap().as_str(),
            "3f9a2c1b7d4e"
        );
        assert_eq!(
            PlanId::parse(PlanId::NO_CHANGES).unwrap().as_str(),
            PlanId::NO_CHANGES
        );
        let long = "a".repeat(64);
        assert_eq!(PlanId::parse(&long).unwrap().as_str(), long);
        let id = PlanId::compute("h", "b", &units(&[("a", fp('1'))]));
        assert_eq!(PlanId::parse(id.as_str()).unwrap(), id);
    }

    #[test]
    fn parse_messages() {
        let err = |s: &str| PlanId::parse(s).unwrap_err();
        insta::assert_snapshot!(err(""), @"the plan id is missing: a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`");
        insta::assert_snapshot!(err("   "), @"the plan id is missing: a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`");
        insta::assert_snapshot!(err("3f9a2c"), @"`3f9a2c` is too short for a plan id (6 characters); a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`");
        insta::assert_snapshot!(err("3f9a2c1b7d4g"), @r#"`3f9a2c1b7d4g` is not a plan id: `g` is not a hexadecimal digit; a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`"#);
        insta::assert_snapshot!(err("3f9a 2c1b7d4e"), @r#"`3f9a 2c1b7d4e` is not a plan id: a space is not a hexadecimal digit; a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`"#);
        insta::assert_snapshot!(err(&"a".repeat(65)), @"`aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa` is too long for a plan id (65 characters); a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`");
        insta::assert_snapshot!(err(&"b".repeat(100)), @"`bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb…` is too long for a plan id (100 characters); a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`");
        insta::assert_snapshot!(err("0x3f9a2c1b7d4e"), @r#"`0x3f9a2c1b7d4e` is not a plan id: `x` is not a hexadecimal digit; a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`"#);
    }
}
