//! When a reviewed plan is applied (`apply:` in `.cascade.yaml`): by comment before merge
//! (`comment`, the default: `/apply <id>`), or by cascade itself after merge (`on_merge`),
//! for every unit or for the units and environments named.
//!
//! Owns the written shape (a word, or a mapping with `mode`, `units`, `environments`), its
//! located errors, and [`ApplyMode::on_merge`]: which units apply after merge. Never
//! applies anything: the bot does, on the merge event.

use super::diagnose::{problem_at, shortened};
use super::file::{TableShape, list};
use super::validate::compile_globs;
use super::{CompiledGlobs, Environment};
use crate::problem::Problem;
use crate::unit::UnitPath;
use schemars::JsonSchema;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_saphyr::Spanned;
use std::fmt;

/// The two ways a plan reaches the infrastructure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `/apply <id>` on the pull request, before it is merged (Atlantis's way).
    #[default]
    Comment,
    /// After the merge: cascade plans each unit again at the merge commit and applies it
    /// only if that plan equals the approved one.
    OnMerge,
}

/// `apply:` as written: a word (`apply: on_merge`), or a mapping that limits the mode
/// to some units.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ApplyModeEntry {
    /// `comment` (the default: `/apply <id>` before merge) or `on_merge` (cascade applies
    /// after merge, only what equals the approved plan).
    pub mode: Mode,
    /// Globs of the units `mode` is for; the others are applied by comment. None: every
    /// unit (within `environments`, if given).
    #[serde(default, deserialize_with = "unit_globs")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["live/prod/**"])]
    pub units: Vec<Spanned<String>>,
    /// Names from `environments:` whose units `mode` is for. None: any.
    #[serde(default, deserialize_with = "names")]
    #[schemars(with = "Vec<String>", extend("default" = []), example = ["prod"])]
    pub environments: Vec<Spanned<String>>,
}

/// What the schema says `apply:` may be: a word, or the mapping.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(super) enum ApplySchema {
    Word(Mode),
    Table(ApplyModeEntry),
}

impl TableShape for ApplyModeEntry {
    const EXPECTING: &'static str = "`apply` must be `comment` or `on_merge`, or a mapping like \
        `{mode: on_merge, units: [\"live/prod/**\"]}`";
    fn empty() -> Option<Self> {
        None
    }
}

fn unit_globs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        d,
        "`apply.units` must be a list of globs, like `units: [\"live/prod/**\"]`",
    )
}

fn names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Spanned<String>>, D::Error> {
    list(
        d,
        "`apply.environments` must be a list of environment names, like `environments: [prod]`",
    )
}

/// Reads `apply:` as a word or a mapping.
pub(super) fn apply<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Spanned<ApplyModeEntry>>, D::Error> {
    struct EntryVisitor;
    impl<'de> Visitor<'de> for EntryVisitor {
        type Value = ApplyModeEntry;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(ApplyModeEntry::EXPECTING)
        }
        fn visit_str<E: de::Error>(self, word: &str) -> Result<ApplyModeEntry, E> {
            let mode = match word {
                "comment" => Mode::Comment,
                "on_merge" => Mode::OnMerge,
                _ => return Err(E::invalid_value(de::Unexpected::Str(word), &self)),
            };
            Ok(ApplyModeEntry {
                mode,
                units: Vec::new(),
                environments: Vec::new(),
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ApplyModeEntry, A::Error> {
            ApplyModeEntry::deserialize(MapAccessDeserializer::new(map))
        }
    }
    let spanned = Spanned::<Wrapped>::deserialize(deserializer)?;
    return Ok(Some(Spanned::new(
        spanned.value.0,
        spanned.referenced,
        spanned.defined,
    )));

    struct Wrapped(ApplyModeEntry);
    impl<'de> Deserialize<'de> for Wrapped {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Wrapped, D::Error> {
            d.deserialize_any(EntryVisitor).map(Wrapped)
        }
    }
}

/// Which units are applied after merge; the rest by comment.
#[derive(Clone, Debug, Default)]
pub struct ApplyMode {
    mode: Mode,
    units: CompiledGlobs,
    environments: Vec<String>,
}

impl ApplyMode {
    /// `true` when `unit` (in `environment`) is applied by cascade after merge.
    pub fn on_merge(&self, unit: &UnitPath, environment: Option<&str>) -> bool {
        self.mode == Mode::OnMerge
            && (self.units.patterns.is_empty() || self.units.set.is_match(unit.as_str()))
            && (self.environments.is_empty()
                || environment.is_some_and(|e| self.environments.iter().any(|n| n == e)))
    }

    /// `true` when some unit may be applied after merge.
    pub fn any_on_merge(&self) -> bool {
        self.mode == Mode::OnMerge
    }
}

/// Checks `apply:` against the environments it names.
pub(super) fn apply_mode(
    entry: Spanned<ApplyModeEntry>,
    environments: &[Environment],
) -> Result<ApplyMode, Problem> {
    let entry = entry.value;
    for name in &entry.environments {
        if !environments.iter().any(|e| e.name == name.value) {
            return Err(problem_at(
                name.referenced,
                format!(
                    "`apply.environments` names `{}`, which is not under `environments:`; \
                     add it there or remove it here",
                    shortened(&name.value)
                ),
            ));
        }
    }
    Ok(ApplyMode {
        mode: entry.mode,
        units: compile_globs("apply.units", &entry.units)?,
        environments: entry.environments.into_iter().map(|n| n.value).collect(),
    })
}

#[cfg(test)]
mod tests {
    use crate::config::RepoConfig;
    use crate::unit::UnitPath;

    fn unit(p: &str) -> UnitPath {
        UnitPath::new(p)
    }

    #[test]
    fn comment_is_the_default_and_a_word_turns_every_unit_on_merge() {
        let none = RepoConfig::parse("{}").unwrap();
        assert!(!none.applies_on_merge(&unit("live/prod/vpc")));
        let all = RepoConfig::parse("apply: on_merge\n").unwrap();
        assert!(all.applies_on_merge(&unit("live/prod/vpc")));
        let comment = RepoConfig::parse("apply: comment\n").unwrap();
        assert!(!comment.applies_on_merge(&unit("live/prod/vpc")));
    }

    #[test]
    fn a_mapping_limits_on_merge_to_units_and_environments() {
        let config = RepoConfig::parse(
            "environments: {prod: live/prod, dev: live/dev}\n\
             apply: {mode: on_merge, units: [\"live/*/dns\", \"live/prod/**\"], environments: [prod]}\n",
        )
        .unwrap();
        assert!(config.applies_on_merge(&unit("live/prod/dns")));
        assert!(config.applies_on_merge(&unit("live/prod/vpc")));
        assert!(
            !config.applies_on_merge(&unit("live/dev/dns")),
            "dev is not listed"
        );
    }

    #[test]
    fn wrong_values_are_located_and_say_what_to_write() {
        let word = RepoConfig::parse("apply: after_merge\n")
            .unwrap_err()
            .to_string();
        assert!(word.contains("`apply` must be `comment` or"), "{word}");
        assert!(word.starts_with(".cascade.yaml:1:"), "{word}");
        let env = RepoConfig::parse("apply: {mode: on_merge, environments: [prod]}\n")
            .unwrap_err()
            .to_string();
        assert!(env.contains("`apply.environments` names `prod`"), "{env}");
        let key = RepoConfig::parse("apply: {mode: on_merge, unit: [x]}\n")
            .unwrap_err()
            .to_string();
        assert!(key.contains("unit"), "{key}");
    }
}
