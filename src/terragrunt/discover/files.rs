//! The files of a discovery: what each unit owns, where the files it reads
//! really are (generated directories and symbolic links resolved), and what
//! the walk refused.

use super::super::context::Session;
use super::super::fs::{Refusal, STACK_DIR, Truncation};
use super::super::limits::{Limit, MAX_PROBLEMS_PER_UNIT, MAX_WALK_DEPTH, MAX_WALK_ENTRIES};
use super::super::{ReadSet, Unit, UnitKind, paths};
use super::{rebase, unit_dir};
use crate::problem::{Problem, ProblemKind};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Problems of the walk itself: symbolic links it refused and directories it
/// did not enter (each makes the unit whose directory holds it unresolved; the
/// first [`MAX_PROBLEMS_PER_UNIT`] are listed), and a walk cut short.
pub(super) fn walk_problems(
    session: &Session,
    base: &str,
    units: &mut [Unit],
    problems: &mut Vec<Problem>,
) {
    let refused = session.fs.refused();
    if refused.is_empty() && session.fs.truncated().is_none() {
        return;
    }
    let owners: BTreeMap<String, usize> = units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == UnitKind::Terragrunt)
        .map(|(i, u)| (u.path.as_str().to_string(), i))
        .collect();
    for (link, refusal) in refused.iter().take(MAX_PROBLEMS_PER_UNIT) {
        let message = match refusal {
            Refusal::Escapes => {
                "this symbolic link leads outside the repository; cascade neither follows nor reads it (make it a file or directory inside the repository)"
            }
            Refusal::Loop => {
                "this symbolic link leads to a directory it is itself inside of (a loop); cascade does not follow it (point it elsewhere or remove it)"
            }
            Refusal::TooManyLinks => {
                "cascade did not follow this symbolic link: the walk already followed its limit of links to directories (replace some links with directories)"
            }
            Refusal::NotUtf8 => {
                "this directory's (or link's) name is not valid UTF-8, so cascade cannot tell it, or a unit under it, from a name differing only there; cascade does not walk it (rename it)"
            }
            Refusal::TooDeep => &format!(
                "cascade did not walk this directory: it is more than cascade's limit of {MAX_WALK_DEPTH} levels below the directory it discovers (flatten the layout)"
            ),
        };
        let rel = rebase(base, link);
        let mut problem =
            Problem::new(ProblemKind::Unresolved, message).at(rel.clone(), None, None);
        if let Some(&i) = owner(&owners, &rel) {
            problem = problem.unit(&units[i].path);
        }
        problems.push(problem);
    }
    if refused.len() > MAX_PROBLEMS_PER_UNIT {
        problems.push(Problem::new(
            ProblemKind::Unresolved,
            format!(
                "{} more symbolic links or directories were not followed; fix the ones above first",
                refused.len() - MAX_PROBLEMS_PER_UNIT
            ),
        ));
    }
    for link in refused.keys() {
        if let Some(&i) = owner(&owners, &rebase(base, link)) {
            units[i].unresolved = true;
        }
    }
    match session.fs.truncated() {
        Some(Truncation::Entries) => problems.push(Problem::new(
            ProblemKind::Unresolved,
            format!("the repository holds more than {MAX_WALK_ENTRIES} files and directories, cascade's limit; only part of it was discovered (ignore large directories in .cascade.yaml or discover a subdirectory)"),
        )),
        Some(Truncation::Deadline) => problems.push(Problem::new(
            ProblemKind::Unresolved,
            Limit::Deadline.message(),
        )),
        None => {}
    }
}

/// The unit whose directory holds `rel` (the nearest one above it).
fn owner<'m>(owners: &'m BTreeMap<String, usize>, rel: &str) -> Option<&'m usize> {
    let mut dir = paths::parent(rel);
    loop {
        let key = if dir.is_empty() { "." } else { dir };
        if let Some(i) = owners.get(key) {
            return Some(i);
        }
        if dir.is_empty() {
            return None;
        }
        dir = paths::parent(dir);
    }
}

/// `reads` where git sees them: a path in a generated directory is its
/// source's, and for each path reached through a symbolic link, the path it
/// really is and the links on its way are added.
pub(super) fn with_link_targets(session: &Session, reads: ReadSet) -> ReadSet {
    if !session.fs.has_links_or_generated() {
        // Nothing to resolve (most repositories): the set as it is.
        return reads;
    }
    // A fetched tree's files are no repository files: a change cannot touch
    // them (the stack file naming the source is read, and a new ref changes it).
    let mut out = ReadSet {
        files: reads
            .files
            .iter()
            .map(|f| session.fs.physical(f).into_owned())
            .filter(|f| !session.fs.is_mounted(f))
            .collect(),
        dirs: reads
            .dirs
            .iter()
            .map(|d| session.fs.physical(d).into_owned())
            .filter(|d| !session.fs.is_mounted(d))
            .collect(),
        globs: reads.globs,
    };
    let reads = &out.clone();
    for file in &reads.files {
        if let Some((real, links)) = session.fs.through_links(file) {
            out.files.insert(real);
            out.files.extend(links);
        }
    }
    for dir in &reads.dirs {
        if let Some((real, links)) = session.fs.through_links(dir) {
            out.dirs.insert(real);
            out.files.extend(links);
        }
    }
    out
}

/// Each unit owns the files of its directory, down to (not into) nested units.
pub(super) fn assign_own_files(session: &Session, base: &str, units: &mut [Unit]) {
    let index: BTreeMap<String, usize> = units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            (
                paths::clean(&paths::join(base, unit_dir(&u.path))).unwrap_or_default(),
                i,
            )
        })
        .collect();
    // Units by directory, each one's files found in parallel.
    let owned_by_unit: Vec<(usize, Vec<String>)> = index
        .par_iter()
        // What generation writes is no file in the repository: a generated
        // unit reads its sources instead (see its read set).
        .filter(|(dir, _)| !dir.split('/').any(|part| part == STACK_DIR))
        .map(|(dir, &i)| {
            let mut mine = session.fs.files_under_walked(dir);
            mine.retain(|file| {
                let mut owner = paths::parent(file);
                loop {
                    if let Some(&j) = index.get(owner) {
                        return j == i;
                    }
                    if owner.is_empty() {
                        return false;
                    }
                    owner = paths::parent(owner);
                }
            });
            (i, mine)
        })
        .collect();
    let mut owned: Vec<Vec<String>> = vec![Vec::new(); units.len()];
    for (i, files) in owned_by_unit {
        owned[i] = files;
    }
    units.par_iter_mut().zip(owned).for_each(|(unit, files)| {
        // A file reached through a link changes where the link points.
        for file in &files {
            if let Some((real, links)) = session.fs.through_links(file) {
                unit.reads.files.insert(rebase(base, &real));
                unit.reads
                    .files
                    .extend(links.iter().map(|l| rebase(base, l)));
            }
        }
        unit.own_files = if base.is_empty() {
            files
        } else {
            files.iter().map(|f| rebase(base, f)).collect()
        };
    });
}
