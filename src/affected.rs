//! Mapping changed files onto units: which units a pull request affects, and why.
//!
//! Owns: the file → unit index built from one discovery ([`ReadIndex`]), the
//! rules that decide whether a changed file hits a unit (own directory, read
//! set, unresolved), propagation to transitive dependents, and the plan and
//! destroy waves of the result.
//! Must never: read files or run git; it works on the paths discovery and
//! `git` already produced, so one index serves many change sets quickly.

use crate::discovery::Unit;
use crate::graph::Graph;
use crate::unit::UnitPath;
use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Serialize, Serializer};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;

/// Why a unit is affected.
///
/// When several reasons apply to one unit, the first in declaration order wins
/// (and among files, the smallest path), so the reason shown on the PR is stable
/// across runs. `Deleted` stands alone: a deleted unit has no other reason.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// A file in the unit's own directory (not in a nested unit's) changed.
    Changed(String),
    /// A file in the unit's read set changed.
    Reads(String),
    /// Discovery could not tell what the unit reads, so any change affects it.
    Unresolved,
    /// The unit depends on this affected unit.
    DependsOn(UnitPath),
    /// The pull request deletes the unit: it is destroyed from the base revision.
    Deleted,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Changed(file) => write!(f, "changed {file}"),
            Reason::Reads(file) => write!(f, "reads {file}"),
            Reason::DependsOn(unit) => write!(f, "depends on {unit}"),
            Reason::Deleted => f.write_str("deleted"),
            Reason::Unresolved => f.write_str("unresolved"),
        }
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One affected unit and the reason shown for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AffectedUnit {
    pub path: UnitPath,
    pub reason: Reason,
}

/// The affected set of one change set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Affected {
    /// The changed files, sorted, without duplicates.
    pub changed: Vec<String>,
    /// Every affected unit, deleted ones included, sorted by path.
    pub units: Vec<AffectedUnit>,
    /// Plan order of the affected units present in the head graph (deleted ones excluded).
    pub waves: Vec<Vec<UnitPath>>,
    /// Destroy order of the deleted units, from the base graph.
    pub destroy_waves: Vec<Vec<UnitPath>>,
}

impl Affected {
    /// The reason a unit is affected, or `None` when it is not.
    pub fn reason(&self, unit: &UnitPath) -> Option<&Reason> {
        self.units
            .binary_search_by(|u| u.path.cmp(unit))
            .ok()
            .map(|i| &self.units[i].reason)
    }
}

/// How a single file hits a unit, before dependents are added. Ordered by precedence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Hit {
    Changed,
    Reads,
}

/// Which units each file hits, built once per discovery and reused for every
/// change set (each push of each PR).
///
/// Every lookup is a hash probe per path component of the changed file, plus
/// one [`GlobSet`] match, so the cost grows with the size of the change, not
/// with the number of units.
#[derive(Clone, Debug)]
pub struct ReadIndex {
    /// The indexed units, by position; the maps below hold positions.
    paths: Vec<UnitPath>,
    excluded: Vec<bool>,
    /// Unit directory → unit, to find the unit that owns a file by walking up
    /// its parent directories. The root unit is keyed `.`.
    unit_dirs: HashMap<String, u32>,
    /// Exact files read (`reads.files`).
    files: HashMap<String, Vec<u32>>,
    /// Directories read recursively (`reads.dirs`); the whole repo is keyed `.`.
    dirs: HashMap<String, Vec<u32>>,
    /// Every distinct glob of every read set, in one automaton; `glob_units[i]`
    /// are the units that read glob `i`.
    globs: GlobSet,
    glob_units: Vec<Vec<u32>>,
    /// Units affected by any change, sorted by path.
    unresolved: Vec<u32>,
}

impl ReadIndex {
    /// Indexes the units of one discovery.
    ///
    /// A glob that does not compile makes its unit unresolved: we cannot tell
    /// what it reads, and planning too much is safer than missing a unit.
    pub fn new(units: &[Unit]) -> ReadIndex {
        let mut index = ReadIndex {
            paths: Vec::with_capacity(units.len()),
            excluded: Vec::with_capacity(units.len()),
            unit_dirs: HashMap::with_capacity(units.len()),
            files: HashMap::new(),
            dirs: HashMap::new(),
            globs: GlobSet::empty(),
            glob_units: Vec::new(),
            unresolved: Vec::new(),
        };
        let mut unresolved = vec![false; units.len()];
        let mut glob_ids: HashMap<&str, usize> = HashMap::new();
        let mut glob_set = GlobSetBuilder::new();

        for (i, unit) in units.iter().enumerate() {
            let id = i as u32;
            index.paths.push(unit.path.clone());
            index.excluded.push(unit.excluded.is_some());
            index.unit_dirs.insert(unit.path.as_str().to_owned(), id);
            unresolved[i] = unit.unresolved;
            for file in &unit.reads.files {
                index
                    .files
                    .entry(normalize(file).to_owned())
                    .or_default()
                    .push(id);
            }
            for dir in &unit.reads.dirs {
                index
                    .dirs
                    .entry(normalize(dir).to_owned())
                    .or_default()
                    .push(id);
            }
            for pattern in &unit.reads.globs {
                let pattern = normalize(pattern);
                if let Some(&g) = glob_ids.get(pattern) {
                    index.glob_units[g].push(id);
                    continue;
                }
                // Terraform's `fileset` and Terragrunt's globs: `*` stays inside one
                // path component, `**` crosses them.
                match GlobBuilder::new(pattern).literal_separator(true).build() {
                    Ok(glob) => {
                        glob_ids.insert(pattern, index.glob_units.len());
                        index.glob_units.push(vec![id]);
                        glob_set.add(glob);
                    }
                    Err(_) => unresolved[i] = true,
                }
            }
        }
        match glob_set.build() {
            Ok(set) => index.globs = set,
            Err(_) => {
                // Each glob compiled alone, so only a size limit can fail here;
                // fall back to treating every glob reader as unresolved.
                for readers in index.glob_units.drain(..) {
                    for id in readers {
                        unresolved[id as usize] = true;
                    }
                }
            }
        }
        for ids in index
            .files
            .values_mut()
            .chain(index.dirs.values_mut())
            .chain(index.glob_units.iter_mut())
        {
            ids.sort_unstable();
            ids.dedup();
        }
        index.unresolved = (0..units.len() as u32)
            .filter(|&i| unresolved[i as usize])
            .collect();
        index
            .unresolved
            .sort_by(|&a, &b| index.paths[a as usize].cmp(&index.paths[b as usize]));
        index
    }

    /// The units a change to `file` affects directly (dependents not included),
    /// sorted by path, each with its reason. Unresolved units are included:
    /// any change affects them.
    pub fn units_reading(&self, file: &str) -> Vec<(UnitPath, Reason)> {
        let mut best: BTreeMap<&UnitPath, Reason> = BTreeMap::new();
        let mut globs = Vec::new();
        self.hits(file, &mut globs, |id, hit| {
            let reason = match hit {
                Hit::Changed => Reason::Changed(file.to_owned()),
                Hit::Reads => Reason::Reads(file.to_owned()),
            };
            let slot = best
                .entry(&self.paths[id as usize])
                .or_insert_with(|| reason.clone());
            if reason < *slot {
                *slot = reason;
            }
        });
        for &id in &self.unresolved {
            if !self.excluded[id as usize] {
                best.entry(&self.paths[id as usize])
                    .or_insert(Reason::Unresolved);
            }
        }
        best.into_iter()
            .map(|(path, reason)| (path.clone(), reason))
            .collect()
    }

    /// Calls `hit` for every non-excluded unit that `file` hits, possibly more
    /// than once per unit. `scratch` is reused between calls for glob matches.
    fn hits(&self, file: &str, scratch: &mut Vec<usize>, mut hit: impl FnMut(u32, Hit)) {
        let mut keep = |id: u32, h: Hit| {
            if !self.excluded[id as usize] {
                hit(id, h)
            }
        };
        // The owner is the deepest unit whose directory holds the file; a file in
        // an excluded unit's directory belongs to that unit, never to its parent.
        if let Some(&owner) = parents(file)
            .chain(["."])
            .find_map(|dir| self.unit_dirs.get(dir))
        {
            keep(owner, Hit::Changed);
        }
        for &id in self.files.get(file).into_iter().flatten() {
            keep(id, Hit::Reads);
        }
        // The file's own path counts as a read directory too: a submodule bump
        // shows up as one changed path named like the directory.
        for dir in std::iter::once(file).chain(parents(file)).chain(["."]) {
            for &id in self.dirs.get(dir).into_iter().flatten() {
                keep(id, Hit::Reads);
            }
        }
        if !self.glob_units.is_empty() {
            self.globs
                .matches_candidate_into(&Candidate::new(file), scratch);
            for &g in scratch.iter() {
                for &id in &self.glob_units[g] {
                    keep(id, Hit::Reads);
                }
            }
        }
    }
}

/// The parent directories of a `/`-separated path, deepest first, without `.`:
/// `a/b/c.tf` gives `a/b`, then `a`.
fn parents(file: &str) -> impl Iterator<Item = &str> {
    let mut rest = file;
    std::iter::from_fn(move || {
        let cut = rest.rfind('/')?;
        rest = &rest[..cut];
        Some(rest)
    })
}

/// Read-set entries as discovery may spell them (`./x`, `dir/`) in the form
/// git reports paths; the repository root itself is `.`.
fn normalize(path: &str) -> &str {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let p = p.trim_end_matches('/');
    if p.is_empty() { "." } else { p }
}

/// The units `changed` affects: directly (own directory, read set, unresolved),
/// through dependencies, and by deletion.
///
/// `index` and `head_units` come from the discovery at the head revision;
/// `deleted` from [`deleted_units`]; `base_graph` orders the destroys (without
/// it, deleted units form a single wave). Excluded units are never affected, and
/// a change does not travel through them to their dependents: they are not
/// planned, so their outputs cannot change.
pub fn affected(
    index: &ReadIndex,
    head_units: &[Unit],
    head_graph: &Graph,
    changed: &[String],
    deleted: &[UnitPath],
    base_graph: Option<&Graph>,
) -> Affected {
    let mut changed = changed.to_vec();
    changed.sort();
    changed.dedup();
    let excluded: HashSet<&UnitPath> = head_units
        .iter()
        .filter(|u| u.excluded.is_some())
        .map(|u| &u.path)
        .chain(
            index
                .paths
                .iter()
                .zip(&index.excluded)
                .filter(|(_, x)| **x)
                .map(|(p, _)| p),
        )
        .collect();

    // Files go in sorted order, so the first file seen for a given kind of hit
    // is the smallest; only a better kind replaces it. Units are positions and
    // files are indices into `changed` until the end: a change can hit every
    // unit, and cloning paths per hit is what would cost the time.
    let mut direct: Vec<Option<(Hit, usize)>> = vec![None; index.paths.len()];
    let mut scratch = Vec::new();
    for (f, file) in changed.iter().enumerate() {
        index.hits(file, &mut scratch, |id, hit| {
            match &mut direct[id as usize] {
                Some(slot) if slot.0 <= hit => {}
                slot => *slot = Some((hit, f)),
            }
        });
    }
    let mut why: HashMap<&UnitPath, Why<'_>> = HashMap::new();
    for (id, slot) in direct.iter().enumerate() {
        if let Some((hit, f)) = *slot {
            why.insert(&index.paths[id], Why::Hit(hit, f));
        }
    }
    if !changed.is_empty() {
        for &id in &index.unresolved {
            why.entry(&index.paths[id as usize])
                .or_insert(Why::Unresolved);
        }
    }
    why.retain(|path, _| !excluded.contains(*path));

    // Breadth-first over dependents, stopping at excluded units.
    // No membership test: `dependents` of a unit the graph lacks is empty.
    let mut queue: VecDeque<&UnitPath> = why.keys().copied().collect();
    let mut reached: Vec<&UnitPath> = Vec::new();
    while let Some(unit) = queue.pop_front() {
        for dependent in head_graph.dependents(unit) {
            if excluded.contains(dependent) || why.contains_key(dependent) {
                continue;
            }
            why.insert(dependent, Why::Reached);
            reached.push(dependent);
            queue.push_back(dependent);
        }
    }
    // Name the smallest affected dependency (`dependencies` is sorted), so the
    // reason does not depend on the order the walk happened to take.
    for unit in reached {
        let via = head_graph
            .dependencies(unit)
            .into_iter()
            .find(|d| why.contains_key(*d))
            .expect("a dependent is reached through an affected dependency");
        why.insert(unit, Why::DependsOn(via));
    }

    let deleted: BTreeSet<UnitPath> = deleted.iter().cloned().collect();
    let destroy_waves = destroy_waves(base_graph, &deleted);
    let mut units: Vec<(&UnitPath, Why<'_>)> = why.into_iter().collect();
    units.sort_unstable_by(|a, b| a.0.cmp(b.0));
    // Built from sorted paths, so the set is bulk-loaded; `waves_of` ignores
    // units its graph lacks, so no membership test is needed here either.
    let planned: BTreeSet<UnitPath> = units
        .iter()
        .filter(|(p, _)| !deleted.contains(*p))
        .map(|(p, _)| (*p).clone())
        .collect();
    let waves = if planned.is_empty() {
        Vec::new()
    } else {
        head_graph.waves_of(&planned)
    };

    let mut units: Vec<AffectedUnit> = units
        .into_iter()
        .map(|(path, why)| AffectedUnit {
            path: path.clone(),
            reason: match why {
                Why::Hit(Hit::Changed, f) => Reason::Changed(changed[f].clone()),
                Why::Hit(Hit::Reads, f) => Reason::Reads(changed[f].clone()),
                Why::Unresolved => Reason::Unresolved,
                Why::DependsOn(via) => Reason::DependsOn(via.clone()),
                Why::Reached => unreachable!("every reached unit was given its dependency"),
            },
        })
        .collect();
    // A deleted unit is not in the head discovery, so it cannot have another
    // reason; replace one anyway rather than list a path twice.
    if !deleted.is_empty() {
        units.retain(|u| !deleted.contains(&u.path));
        units.extend(deleted.into_iter().map(|path| AffectedUnit {
            path,
            reason: Reason::Deleted,
        }));
        units.sort_by(|a, b| a.path.cmp(&b.path));
    }
    Affected {
        changed,
        units,
        waves,
        destroy_waves,
    }
}

/// A [`Reason`] in the making, borrowing paths and naming files by index.
#[derive(Clone, Copy)]
enum Why<'a> {
    Hit(Hit, usize),
    Unresolved,
    /// Reached through dependents; its dependency is named once the walk is done.
    Reached,
    DependsOn(&'a UnitPath),
}

/// Destroy order for the deleted units. A deleted unit the base graph does not
/// know has no known dependents, so it joins the first wave rather than being
/// dropped: a unit the PR deletes must never silently keep its resources.
fn destroy_waves(base_graph: Option<&Graph>, deleted: &BTreeSet<UnitPath>) -> Vec<Vec<UnitPath>> {
    if deleted.is_empty() {
        return Vec::new();
    }
    let Some(base) = base_graph else {
        return vec![deleted.iter().cloned().collect()];
    };
    let mut waves = base.waves_down_of(deleted);
    let unknown: Vec<UnitPath> = deleted
        .iter()
        .filter(|u| !base.contains(u))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        if waves.is_empty() {
            waves.push(Vec::new());
        }
        waves[0].extend(unknown);
        waves[0].sort();
    }
    waves
}

/// Units present in `base` but absent from `head` (by path), sorted.
pub fn deleted_units(base: &[Unit], head: &[Unit]) -> Vec<UnitPath> {
    let head: HashSet<&UnitPath> = head.iter().map(|u| &u.path).collect();
    let mut gone: Vec<UnitPath> = base
        .iter()
        .filter(|u| !head.contains(&u.path))
        .map(|u| u.path.clone())
        .collect();
    gone.sort();
    gone.dedup();
    gone
}
