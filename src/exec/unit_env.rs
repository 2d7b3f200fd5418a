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
//! comment. Never logs, quotes or returns a value in an error, and never lets
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
    /// Glob over the repository (`acme/*`; `gitlab:group/*`; the CLI: its directory).
    #[serde(default)]
    repository: Option<String>,
    /// Glob or globs over the unit's path (`prod/**`).
    units: Globs,
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
        Ok(UnitEnv { entries })
    }

    /// The variables `unit` of `repo` gets in `phase`, by name: the first matching
    /// entry's, or none.
    pub fn vars(
        &self,
        repo: &str,
        unit: &UnitPath,
        phase: Phase,
    ) -> impl Iterator<Item = (&str, &SecretString)> {
        self.entries
            .iter()
            .find(|e| e.matches(repo, unit))
            .into_iter()
            .flat_map(move |e| match phase {
                Phase::Plan => &e.plan,
                Phase::Apply => &e.apply,
            })
            .map(|(k, v)| (k.as_str(), v))
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
        let globs = match entry.units {
            Globs::One(glob) => vec![glob],
            Globs::Many(globs) => globs,
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
