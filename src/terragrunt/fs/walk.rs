//! The bounded walk of the repository (or of a fetched tree): every directory a rayon
//! task, or one at a time where the result would otherwise depend on which task came
//! first; links followed only once resolved inside the root, loops spotted, the entry and
//! linked-directory limits and the deadline kept.
//!
//! Owns: listing what a walk reaches. Never: follows a link it has not resolved inside
//! the root, or enters a skipped directory (`SKIPPED_DIRS`).

use super::*;

/// The real directories on the way to a walked directory, to spot link loops.
struct Chain {
    real: PathBuf,
    parent: Option<Arc<Chain>>,
}

impl Chain {
    fn contains(&self, dir: &Path) -> bool {
        let mut link = Some(self);
        while let Some(c) = link {
            if c.real == dir {
                return true;
            }
            link = c.parent.as_deref();
        }
        false
    }
}

/// A directory the walk has still to read.
struct Pending {
    /// Repo-relative, at the path the walk reached it by.
    rel: String,
    depth: usize,
    /// Its real path (`chain.real`) and those of the directories above it.
    chain: Arc<Chain>,
}

/// Walks `start` (repo-relative) under the canonical `root`. With `parallel`,
/// on the current rayon pool, every directory a task; where that walk would
/// depend on which task came first (the entry and linked-directory limits),
/// it gives up and the walk is done again in one thread, in the order the
/// directories list their entries, so the same tree always gives the same
/// listing. The deadline alone stops either walk where it is.
pub(super) fn walk_listing(
    root: &Path,
    start: &str,
    deadline: Option<Instant>,
    parallel: bool,
) -> Listing {
    let parallel = Walk::new(root, deadline, parallel);
    parallel.run(start);
    let walk = if parallel.order_matters.load(Ordering::Relaxed) {
        let sequential = Walk::new(root, deadline, false);
        sequential.run(start);
        sequential
    } else {
        parallel
    };
    walk.found.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// One bounded walk; never follows a link it has not resolved inside the root.
pub(super) struct Walk<'r> {
    root: &'r Path,
    deadline: Option<Instant>,
    /// Whether directories are read by parallel tasks (else one at a time, depth first).
    parallel: bool,
    entries: AtomicUsize,
    linked_dirs: AtomicUsize,
    /// Set once the walk must stop: a limit or the deadline.
    stopped: AtomicBool,
    /// Set when the parallel walk reached a limit: what it found then
    /// depends on the order of its tasks.
    order_matters: AtomicBool,
    pub(super) found: Mutex<Listing>,
}

impl<'r> Walk<'r> {
    pub(super) fn new(root: &'r Path, deadline: Option<Instant>, parallel: bool) -> Walk<'r> {
        Walk {
            root,
            deadline,
            parallel,
            entries: AtomicUsize::new(0),
            linked_dirs: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            order_matters: AtomicBool::new(false),
            found: Mutex::new(Listing::default()),
        }
    }

    pub(super) fn run(&self, start: &str) {
        let Ok(real) = std::fs::canonicalize(self.root.join(start)) else {
            return;
        };
        if !real.starts_with(self.root) || !real.is_dir() {
            return;
        }
        let first = Pending {
            rel: start.to_string(),
            depth: 0,
            chain: Arc::new(Chain { real, parent: None }),
        };
        if self.parallel {
            rayon::scope(|scope| self.spawn(scope, first));
        } else {
            let mut pending = vec![first];
            while let Some(dir) = pending.pop() {
                if self.stopped.load(Ordering::Relaxed) {
                    return;
                }
                pending.extend(self.visit(dir));
            }
        }
    }

    fn spawn<'s>(&'s self, scope: &rayon::Scope<'s>, dir: Pending) {
        scope.spawn(move |scope| {
            if self.stopped.load(Ordering::Relaxed) {
                return;
            }
            for next in self.visit(dir) {
                self.spawn(scope, next);
            }
        });
    }

    /// Reads one directory into the listing; returns the directories to walk next.
    fn visit(&self, dir: Pending) -> Vec<Pending> {
        let Pending { rel, depth, chain } = dir;
        let real = &chain.real;
        let mut next = Vec::new();
        let Ok(entries) = std::fs::read_dir(real) else {
            return next;
        };
        let mut local = Listing::default();
        for entry in entries.filter_map(Result::ok) {
            if !self.count() {
                break;
            }
            let raw = entry.file_name();
            let name = raw.to_string_lossy().into_owned();
            let child = paths::join(&rel, &name);
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            // Two directories differing only in non-UTF-8 bytes would share one lossy
            // (unit) path. A file keeps its lossy name: git's diff names it so too.
            if raw.to_str().is_none() && !kind.is_file() {
                local.refused.insert(child, Refusal::NotUtf8);
                continue;
            }
            if kind.is_file() {
                local.files.push(child);
            } else if kind.is_dir() && !is_skipped_dir(&name) {
                if depth >= MAX_WALK_DEPTH {
                    local.refused.insert(child, Refusal::TooDeep);
                } else {
                    local.dirs.insert(child.clone());
                    next.push(Pending {
                        rel: child,
                        depth: depth + 1,
                        chain: Arc::new(Chain {
                            real: entry.path(),
                            parent: Some(chain.clone()),
                        }),
                    });
                }
            } else if kind.is_symlink()
                && let Some(linked) = self.link(
                    &mut local,
                    &child,
                    &name,
                    &entry.path(),
                    real,
                    depth,
                    &chain,
                )
            {
                next.push(linked);
            }
        }
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        found.files.append(&mut local.files);
        found.dirs.extend(local.dirs);
        found.links.extend(local.links);
        found.refused.append(&mut local.refused);
        next
    }

    /// Counts one entry; false once the walk must stop.
    fn count(&self) -> bool {
        if self.stopped.load(Ordering::Relaxed) {
            return false;
        }
        let entries = self.entries.fetch_add(1, Ordering::Relaxed) + 1;
        if entries > MAX_WALK_ENTRIES {
            self.stop(Truncation::Entries);
            return false;
        }
        if entries.is_multiple_of(256) && self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stop(Truncation::Deadline);
            return false;
        }
        true
    }

    /// Stops the walk for `why`; the first reason stays.
    fn stop(&self, why: Truncation) {
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        found.truncated.get_or_insert(why);
        self.stopped.store(true, Ordering::Relaxed);
        if why == Truncation::Entries && self.parallel {
            self.order_matters.store(true, Ordering::Relaxed);
        }
    }

    /// Resolves one link; returns the directory to walk next when it is one.
    #[allow(clippy::too_many_arguments)]
    fn link(
        &self,
        local: &mut Listing,
        rel: &str,
        name: &str,
        path: &Path,
        parent_real: &Path,
        depth: usize,
        chain: &Arc<Chain>,
    ) -> Option<Pending> {
        // A dangling link is no file; reading its path says it does not exist.
        let target = std::fs::canonicalize(path).ok()?;
        let Ok(target_rel) = target.strip_prefix(self.root) else {
            local.refused.insert(rel.to_string(), Refusal::Escapes);
            return None;
        };
        let target_rel = target_rel.to_string_lossy().into_owned();
        let meta = std::fs::metadata(&target).ok()?;
        if meta.is_file() {
            local.files.push(rel.to_string());
            local.links.insert(rel.to_string(), target_rel);
            return None;
        }
        if !meta.is_dir() || is_skipped_dir(name) {
            return None;
        }
        if depth >= MAX_WALK_DEPTH {
            local.refused.insert(rel.to_string(), Refusal::TooDeep);
            return None;
        }
        if chain.contains(&target) || parent_real.starts_with(&target) {
            local.refused.insert(rel.to_string(), Refusal::Loop);
            return None;
        }
        if self.linked_dirs.fetch_add(1, Ordering::Relaxed) >= MAX_LINKED_DIRS {
            if self.parallel {
                // Which links were followed would depend on the tasks' order.
                self.order_matters.store(true, Ordering::Relaxed);
                self.stopped.store(true, Ordering::Relaxed);
            }
            local.refused.insert(rel.to_string(), Refusal::TooManyLinks);
            return None;
        }
        local.dirs.insert(rel.to_string());
        local.links.insert(rel.to_string(), target_rel);
        Some(Pending {
            rel: rel.to_string(),
            depth: depth + 1,
            chain: Arc::new(Chain {
                real: target,
                parent: Some(chain.clone()),
            }),
        })
    }
}
