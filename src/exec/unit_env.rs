//! Per-unit credentials: the operator's `--unit-env-file` (YAML), which gives
//! the terraform / tofu / terragrunt processes of matching units extra
//! environment variables, with separate values for a plan and an apply.
//!
//! Owns the file's format, its checks at start-up (every problem names its
//! path in the file: `[1].apply.AWS_PROFILE`), reading `{file: PATH}` values
//! (once, at start-up, by cascade: the sandboxed processes never need to reach
//! the operator's files), and which entry a unit gets: the **first** whose
//! `repository` and `units` globs match, as Atlantis reads its repository
//! list. Every value is a secret: held in [`SecretString`] and registered with
//! the redactor as it is read, so it is masked in every log, excerpt and
//! comment. A **named** entry (`name:`) is never given automatically: only a
//! workflow of the repository's (`from_server: NAME`) selects it, one variable at
//! a time, and only for the repositories and units its globs cover. Never logs, quotes or returns a value in an error, and never lets
//! a repository (its `.cascade.yaml`, its files) add or change an entry.

use super::Phase;
use crate::unit::UnitPath;
use anyhow::{Context, anyhow};
use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use secrecy::SecretString;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The operator's entries, in the file's order.
#[derive(Debug, Default)]
pub struct UnitEnv {
    entries: Vec<Entry>,
}

#[derive(Debug)]
struct Entry {
    /// Set: the entry is given only when a workflow selects it by this name.
    name: Option<String>,
    repository: Option<GlobMatcher>,
    units: GlobSet,
    /// `env` overlaid with `plan`.
    plan: BTreeMap<String, SecretString>,
    /// `env` overlaid with `apply`.
    apply: BTreeMap<String, SecretString>,
}

/// One entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryFile {
    /// Makes the entry one a workflow selects (`from_server: NAME`), never given
    /// automatically.
    #[serde(default)]
    name: Option<String>,
    /// Glob over the repository (`acme/*`; `gitlab:group/*`; the CLI: its directory).
    #[serde(default)]
    repository: Option<String>,
    /// Glob or globs over the unit's path (`prod/**`); a named entry's default is `**`.
    #[serde(default)]
    units: Option<Globs>,
    #[serde(default)]
    env: BTreeMap<String, ValueFile>,
    #[serde(default)]
    plan: BTreeMap<String, ValueFile>,
    #[serde(default)]
    apply: BTreeMap<String, ValueFile>,
}

#[derive(Deserialize)]
#[serde(untagged, expecting = "a glob or a list of globs")]
enum Globs {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a string, or `{file: PATH}` to read the value from a file"
)]
enum ValueFile {
    Text(String),
    File(FileRef),
}

/// `{file: PATH}`: a mapping with that one key (serde's derive would also take `[PATH]`).
#[derive(Deserialize)]
#[serde(try_from = "BTreeMap<String, PathBuf>")]
struct FileRef {
    file: PathBuf,
}

impl TryFrom<BTreeMap<String, PathBuf>> for FileRef {
    type Error = &'static str;

    fn try_from(mut map: BTreeMap<String, PathBuf>) -> Result<FileRef, Self::Error> {
        match (map.remove("file"), map.is_empty()) {
            (Some(file), true) => Ok(FileRef { file }),
            _ => Err("expected `{file: PATH}`"),
        }
    }
}

impl UnitEnv {
    /// Reads and checks the file at `path`; `{file: …}` values relative to its directory.
    pub fn load(path: &Path) -> anyhow::Result<UnitEnv> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the unit env file {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        UnitEnv::parse(&text, base)
            .with_context(|| format!("the unit env file {} is not valid", path.display()))
    }

    /// Parses `text` (the file's contents); `{file: …}` values are read relative to `base`.
    pub fn parse(text: &str, base: &Path) -> anyhow::Result<UnitEnv> {
        let entries = from_yaml(text)?;
        let entries = entries
            .into_iter()
            .enumerate()
            .map(|(i, entry)| Entry::checked(i, entry, base))
            .collect::<anyhow::Result<Vec<Entry>>>()?;
        for (i, entry) in entries.iter().enumerate() {
            let Some(name) = &entry.name else { continue };
            if let Some(j) = entries[..i].iter().position(|e| e.name == entry.name) {
                anyhow::bail!(
                    "[{i}].name: `{name}` is also the name of [{j}]; make each name unique"
                );
            }
        }
        Ok(UnitEnv { entries })
    }

    /// The variables `unit` of `repo` gets in `phase`, by name: the first matching
    /// entry's without a name, or none.
    pub fn vars(
        &self,
        repo: &str,
        unit: &UnitPath,
        phase: Phase,
    ) -> impl Iterator<Item = (&str, &SecretString)> {
        self.entries
            .iter()
            .find(|e| e.name.is_none() && e.matches(repo, unit))
            .into_iter()
            .flat_map(move |e| match phase {
                Phase::Plan => &e.plan,
                Phase::Apply => &e.apply,
            })
            .map(|(k, v)| (k.as_str(), v))
    }

    /// The value of `var` in `phase` that the entry named `entry` gives `unit` of `repo`,
    /// when a workflow selects it.
    pub(super) fn selected(
        &self,
        entry: &str,
        repo: &str,
        unit: &UnitPath,
        phase: Phase,
        var: &str,
    ) -> Result<&SecretString, NotSelected> {
        // An entry that exists but does not cover the unit answers as one that does not
        // exist: a repository learns nothing of the entries made for others.
        let entry = self
            .entries
            .iter()
            .find(|e| e.name.as_deref() == Some(entry) && e.matches(repo, unit))
            .ok_or(NotSelected::NoEntry)?;
        let values = match phase {
            Phase::Plan => &entry.plan,
            Phase::Apply => &entry.apply,
        };
        values.get(var).ok_or(NotSelected::NoVariable)
    }

    /// How many entries the file has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry was given.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why a workflow's selection gives no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NotSelected {
    /// No entry of that name covers the unit.
    NoEntry,
    /// The entry gives no such variable in the job's phase.
    NoVariable,
}

/// The YAML list, its shape errors named by their path in the file (entries counted
/// from 0) and their line.
/// A shape error can quote the value it found: the message drops quoted text.
fn from_yaml(text: &str) -> anyhow::Result<Vec<EntryFile>> {
    let mut path = None;
    serde_saphyr::with_deserializer_from_str_with_options(
        text,
        crate::config::yaml_options(),
        |de| {
            serde_path_to_error::deserialize(de).map_err(|e| {
                path = Some(e.path().to_string());
                e.into_inner()
            })
        },
    )
    .map_err(|err| {
        // The message ends with the line and column.
        let path = path
            .filter(|p| p != ".")
            .unwrap_or_else(|| "the file".into());
        anyhow!("{path}: {}", unquoted(&err.without_snippet().to_string()))
    })
}

/// `message` without what it quotes between double quotes (a value, maybe a secret).
fn unquoted(message: &str) -> String {
    let mut out = String::new();
    for (i, part) in message.split('"').enumerate() {
        out.push_str(if i % 2 == 0 { part } else { "…" });
    }
    out
}

impl Entry {
    fn checked(i: usize, entry: EntryFile, base: &Path) -> anyhow::Result<Entry> {
        let repository = entry
            .repository
            .as_deref()
            .map(|glob| compile(glob).map(|g| g.compile_matcher()))
            .transpose()
            .with_context(|| format!("[{i}].repository"))?;
        let name = entry
            .name
            .map(|name| check_entry_name(&name).map(|()| name))
            .transpose()
            .with_context(|| format!("[{i}].name"))?;
        let globs = match (entry.units, &name) {
            (Some(Globs::One(glob)), _) => vec![glob],
            (Some(Globs::Many(globs)), _) => globs,
            (None, Some(_)) => vec!["**".to_string()],
            (None, None) => anyhow::bail!(
                "[{i}]: missing field `units`; name the units it is for (`prod/**`), or give the entry a `name:` for workflows to select it by"
            ),
        };
        if globs.is_empty() {
            anyhow::bail!("[{i}].units: name at least one glob (`prod/**`)");
        }
        let mut units = GlobSetBuilder::new();
        for (n, glob) in globs.iter().enumerate() {
            units.add(compile(glob).with_context(|| format!("[{i}].units[{n}]"))?);
        }
        let units = units.build().with_context(|| format!("[{i}].units"))?;
        let env = values(i, "env", entry.env, base)?;
        let mut plan = env.clone();
        plan.extend(values(i, "plan", entry.plan, base)?);
        let mut apply = env;
        apply.extend(values(i, "apply", entry.apply, base)?);
        Ok(Entry {
            name,
            repository,
            units,
            plan,
            apply,
        })
    }

    fn matches(&self, repo: &str, unit: &UnitPath) -> bool {
        self.repository.as_ref().is_none_or(|g| g.is_match(repo))
            && self.units.is_match(unit.as_str())
    }
}

/// `*` stays within a directory, `**` crosses them, as in `.cascade.yaml` and `--units`.
fn compile(glob: &str) -> anyhow::Result<globset::Glob> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|e| {
            anyhow!(
                "`{glob}` is not a valid glob ({}); use `*`, `**`, `?`, `[abc]` or `{{a,b}}`",
                e.kind()
            )
        })
}

/// One of an entry's maps of values, checked, read and registered with the redactor.
fn values(
    i: usize,
    key: &str,
    map: BTreeMap<String, ValueFile>,
    base: &Path,
) -> anyhow::Result<BTreeMap<String, SecretString>> {
    map.into_iter()
        .map(|(name, value)| {
            let at = format!("[{i}].{key}.{name}");
            check_name(&name).with_context(|| at.clone())?;
            let value = match value {
                ValueFile::Text(text) => text,
                ValueFile::File(FileRef { file }) => {
                    let file = base.join(file);
                    let text = std::fs::read_to_string(&file)
                        .with_context(|| format!("{at}: cannot read {}", file.display()))?;
                    text.trim_end_matches(['\n', '\r']).to_string()
                }
            };
            if value.contains('\0') {
                anyhow::bail!("{at}: a value cannot hold a NUL byte");
            }
            crate::redact::register_secret(&value);
            Ok((name, SecretString::from(value)))
        })
        .collect()
}

/// An entry's name, as a workflow writes it after `from_server:`.
fn check_entry_name(name: &str) -> anyhow::Result<()> {
    let plain = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !plain {
        anyhow::bail!("not a plain name; use letters, digits, `_`, `.` and `-`");
    }
    Ok(())
}

/// A variable an entry may set: a plain name, none of cascade's own.
fn check_name(name: &str) -> anyhow::Result<()> {
    let plain = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !plain {
        anyhow::bail!("not a variable name; use letters, digits and `_`");
    }
    if name.starts_with("CASCADE_") {
        anyhow::bail!("`CASCADE_*` variables are cascade's own and never reach terraform");
    }
    if super::env::set_by_cascade(name) {
        anyhow::bail!("cascade sets `{name}` itself for every command");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
