//! Where an expression is evaluated: the shared discovery session (file index,
//! parse cache, memoised reads), the per-unit accumulator (reads, unresolved
//! problems), and the *instance*: one configuration file evaluated for one unit,
//! with the directory functions and locals that context implies.

use super::budget::Budget;
use super::fs::FsIndex;
use super::limits::{Limit, MAX_CONFIG_FILE_BYTES, MAX_SHOWN_PATH_CHARS, PLANNED_ON_EVERY_CHANGE};
use super::parse::{HclFile, ParseError};
use super::value::Value;
use super::{ReadSet, paths};
use crate::problem::CANNOT_READ;
use crate::problem::{Problem, ProblemKind};
use hcl_edit::Span;
use hcl_edit::expr::Expression;
use hcl_edit::structure::Attribute;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A compute-once cache shared by the worker threads. Two threads asking for
/// the same key at once may both compute it (the first result is kept): never
/// blocking on another thread's computation is what keeps a read cycle between
/// files from deadlocking two workers.
pub struct Memo<K, V> {
    cells: Mutex<HashMap<K, V>>,
}

impl<K: Eq + Hash + Clone, V: Clone> Memo<K, V> {
    pub fn new() -> Memo<K, V> {
        Memo {
            cells: Mutex::new(HashMap::new()),
        }
    }

    pub fn get_or(&self, key: &K, compute: impl FnOnce() -> V) -> V {
        self.get_or_redo(key, compute, |_| true)
    }

    /// The value remembered for `key`, if any.
    pub fn get(&self, key: &K) -> Option<V> {
        self.cells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    /// Like [`Memo::get_or`], but a remembered value that is not `kept`
    /// (one cut short by another unit's limit) is computed again and replaced.
    pub fn get_or_redo(
        &self,
        key: &K,
        compute: impl FnOnce() -> V,
        kept: impl Fn(&V) -> bool,
    ) -> V {
        if let Some(v) = self
            .cells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .filter(|v| kept(v))
        {
            return v.clone();
        }
        let v = compute();
        let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        match cells.get(key) {
            Some(old) if kept(old) => old.clone(),
            _ => {
                cells.insert(key.clone(), v.clone());
                v
            }
        }
    }
}

/// State shared by every unit of one discovery run.
pub struct Session {
    /// Absolute path of the repository root, without a trailing slash.
    pub root_abs: String,
    pub fs: FsIndex,
    pub env: BTreeMap<String, String>,
    /// Feature flag overrides, already parsed.
    pub features: BTreeMap<String, Value>,
    /// When evaluation stops: every unit not finished by then is unresolved.
    pub deadline: Option<Instant>,
    files: Memo<String, Result<Arc<HclFile>, ParseError>>,
    pub read_configs: Memo<(String, Option<String>), Arc<ReadConfig>>,
    /// Module directory → every module directory it reads (itself included).
    pub modules: Memo<String, Arc<super::reads::ModuleDirs>>,
    /// Module directory → the local module directories its own files call.
    pub module_calls: Memo<String, Arc<super::reads::ModuleCalls>>,
    /// Remote sources fetched for this discovery (`DiscoverOptions::sources`).
    pub sources: super::remote_source::Sources,
    /// Git sources stacks named that `sources` lacks: the caller fetches them
    /// and discovers again.
    pub wanted: Mutex<BTreeMap<super::remote_source::SourceKey, super::remote_source::GitSource>>,
}

/// The memoised result of `read_terragrunt_config` on one file.
pub struct ReadConfig {
    pub value: Result<Value, EvalError>,
    pub reads: ReadSet,
    pub unresolved: Vec<Problem>,
    /// Whether evaluating it read file contents as data (see [`Acc::data_read`]).
    pub data_read: bool,
    /// False when the reading unit's budget ran out on the way: another unit
    /// must not inherit that, so it evaluates the file again.
    pub complete: bool,
}

impl Session {
    pub fn new(
        root_abs: String,
        fs: FsIndex,
        env: BTreeMap<String, String>,
        features: &BTreeMap<String, String>,
        deadline: Option<Instant>,
    ) -> Session {
        let features = features
            .iter()
            .map(|(k, v)| (k.clone(), flag_value(v)))
            .collect();
        Session {
            root_abs,
            fs,
            env,
            features,
            deadline,
            files: Memo::new(),
            read_configs: Memo::new(),
            modules: Memo::new(),
            module_calls: Memo::new(),
            sources: Default::default(),
            wanted: Mutex::default(),
        }
    }

    /// Parses a repo-relative file once per run (at most
    /// [`MAX_CONFIG_FILE_BYTES`], read through [`FsIndex::read_text`]). A
    /// file in a generated directory is its source's, and named so.
    pub fn parse(&self, rel: &str) -> Result<Arc<HclFile>, ParseError> {
        let physical = self.fs.physical(rel).into_owned();
        self.files
            .get_or(&physical, || self.parse_uncached(&physical))
    }

    /// [`Session::parse`] for a file only one evaluation reads (a unit's own
    /// configuration): parsed now and not kept, unless it is kept already.
    /// Syntax trees are most of discovery's memory.
    pub fn parse_once(&self, rel: &str) -> Result<Arc<HclFile>, ParseError> {
        let physical = self.fs.physical(rel).into_owned();
        match self.files.get(&physical) {
            Some(kept) => kept,
            None => self.parse_uncached(&physical),
        }
    }

    fn parse_uncached(&self, physical: &str) -> Result<Arc<HclFile>, ParseError> {
        let text = self
            .fs
            .read_text(physical, MAX_CONFIG_FILE_BYTES)
            .map_err(|e| ParseError {
                line: None,
                column: None,
                message: format!("{CANNOT_READ}: {e}; {} {PLANNED_ON_EVERY_CHANGE}", e.fix()),
            })?;
        HclFile::parse(physical, &text).map(Arc::new)
    }

    pub fn absolute(&self, rel: &str) -> String {
        paths::absolute(&self.root_abs, rel)
    }

    pub fn resolve(&self, base: &str, path: &str) -> Result<String, String> {
        paths::resolve(&self.root_abs, base, path)
    }
}

/// A `--feature name=value` value: booleans and numbers as such, anything else a string.
fn flag_value(text: &str) -> Value {
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => text
            .parse::<f64>()
            .map(Value::Number)
            .unwrap_or_else(|_| Value::String(text.to_string())),
    }
}

/// An evaluation failure, located in the file whose expression failed.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalError {
    pub message: String,
    pub file: String,
    pub line: Option<u32>,
    /// Set when the failure is one of cascade's limits: `try()` and `can()`
    /// never catch it, and the unit ends unresolved.
    pub limit: Option<Limit>,
}

/// What evaluating one unit collects, whichever file the expression sits in.
pub struct Acc<'b> {
    /// The unit's budget (shared with the files it reads).
    pub budget: &'b Budget,
    pub reads: RefCell<ReadSet>,
    pub unresolved: RefCell<Vec<Problem>>,
    /// Set once evaluation has read a file's contents as data (`file()`,
    /// `read_tfvars_file()`): from then on a computed path that does not exist
    /// in the repository is not shown in messages, since it may carry them.
    pub data_read: Cell<bool>,
}

impl<'b> Acc<'b> {
    pub fn new(budget: &'b Budget) -> Acc<'b> {
        Acc {
            budget,
            reads: RefCell::default(),
            unresolved: RefCell::default(),
            data_read: Cell::new(false),
        }
    }

    pub fn read_file(&self, rel: String) {
        self.reads.borrow_mut().files.insert(rel);
    }

    pub fn read_dir(&self, rel: String) {
        self.reads.borrow_mut().dirs.insert(rel);
    }

    pub fn read_glob(&self, glob: String) {
        self.reads.borrow_mut().globs.insert(glob);
    }

    pub fn unresolved(&self, file: &str, line: Option<u32>, message: String) {
        self.unresolved
            .borrow_mut()
            .push(Problem::new(ProblemKind::Unresolved, message).at(file, line, None));
    }

    pub fn merge(&self, reads: &ReadSet, unresolved: &[Problem], data_read: bool) {
        if data_read {
            self.data_read.set(true);
        }
        let mut mine = self.reads.borrow_mut();
        mine.files.extend(reads.files.iter().cloned());
        mine.dirs.extend(reads.dirs.iter().cloned());
        mine.globs.extend(reads.globs.iter().cloned());
        self.unresolved
            .borrow_mut()
            .extend(unresolved.iter().cloned());
    }
}

/// Which role a file plays for the unit being evaluated; decides what the
/// directory functions return (docs/terragrunt-discovery.md §2.2).
#[derive(Clone, Debug)]
pub enum Role {
    /// The unit's own `terragrunt.hcl`.
    Unit,
    /// A file the unit includes; `parent_dir` is that file's directory.
    Include { parent_dir: String },
    /// A file read with `read_terragrunt_config`: directory functions follow the file.
    Read,
}

/// An include of a unit, as seen from the unit's own file.
pub struct IncludeRef<'a> {
    pub label: String,
    pub expose: bool,
    pub instance: Instance<'a>,
}

/// One configuration file evaluated in the context of one unit.
pub struct Instance<'a> {
    pub s: &'a Session,
    pub acc: &'a Acc<'a>,
    pub file: Arc<HclFile>,
    pub role: Role,
    /// `get_terragrunt_dir()`, and where `find_in_parent_folders` starts (its parent).
    pub tg_dir: String,
    /// `get_original_terragrunt_dir()`: the unit being evaluated.
    pub original_dir: String,
    pub includes: OnceCell<Vec<IncludeRef<'a>>>,
    pub features: Arc<BTreeMap<String, Value>>,
    pub values: Arc<BTreeMap<String, Value>>,
    /// In a stack file: `unit` and `stack`, each mapping a component's name
    /// to `{ path = <where it is generated> }`.
    pub components: Arc<BTreeMap<String, Value>>,
    locals: RefCell<HashMap<String, Result<Value, EvalError>>>,
    /// Set while evaluating what Terragrunt evaluates before it reads
    /// dependency outputs (see [`Instance::before_dependencies`]).
    no_dependency: Cell<bool>,
    in_progress: RefCell<HashSet<String>>,
    /// Where each local is: (position of its `locals` block in the body,
    /// position of the attribute in that block), for constant-time lookup.
    local_exprs: OnceCell<HashMap<String, (usize, usize)>>,
}

impl<'a> Instance<'a> {
    pub fn new(
        s: &'a Session,
        acc: &'a Acc<'a>,
        file: Arc<HclFile>,
        role: Role,
        tg_dir: String,
        original_dir: String,
    ) -> Instance<'a> {
        Instance {
            s,
            acc,
            file,
            role,
            tg_dir,
            original_dir,
            includes: OnceCell::new(),
            features: Arc::default(),
            values: Arc::default(),
            components: Arc::default(),
            locals: RefCell::new(HashMap::new()),
            no_dependency: Cell::new(false),
            in_progress: RefCell::new(HashSet::new()),
            local_exprs: OnceCell::new(),
        }
    }

    /// The directory of the file holding the expression, where the unit
    /// sees it (a generated unit's file sits where generation writes it):
    /// the base for `file()` and friends.
    pub fn file_dir(&self) -> &str {
        match &self.role {
            Role::Include { parent_dir } => parent_dir,
            Role::Unit | Role::Read => &self.tg_dir,
        }
    }

    pub fn error(
        &self,
        span: Option<std::ops::Range<usize>>,
        message: impl Into<String>,
    ) -> EvalError {
        EvalError {
            message: message.into(),
            file: self.file.path.clone(),
            line: self.file.line_of(span),
            limit: None,
        }
    }

    /// The error for a limit this unit ran into here (the first one also
    /// locates the unit's limit problem).
    pub fn limit_error(&self, span: Option<std::ops::Range<usize>>, limit: Limit) -> EvalError {
        let line = self.file.line_of(span);
        self.acc.budget.locate(&self.file.path, line);
        EvalError {
            message: limit.message(),
            file: self.file.path.clone(),
            line,
            limit: Some(limit),
        }
    }

    /// Runs `f` where Terragrunt has no `dependency` variable yet: include
    /// blocks, feature defaults, a dependency block's own attributes. There
    /// `dependency.*` is an error, which `try()` takes the next argument
    /// over and `can()` answers false to, as Terragrunt's evaluation does;
    /// elsewhere it is an output not known until the dependency is applied.
    pub fn before_dependencies<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = self.no_dependency.replace(true);
        let result = f();
        self.no_dependency.set(was);
        result
    }

    /// True inside [`Instance::before_dependencies`].
    pub fn without_dependency(&self) -> bool {
        self.no_dependency.get()
    }

    /// The unit's budget.
    pub fn budget(&self) -> &Budget {
        self.acc.budget
    }

    /// How a message names the computed repo-relative path `rel`.
    ///
    /// The rule: a path that exists in the repository is shown (its name is
    /// already in the pull request). Any other computed path is shown only
    /// while this unit has read no file contents as data (so it was built from
    /// the configuration's own text) and only if it is short and printable;
    /// otherwise the message says a path was computed and not shown. The
    /// server's absolute paths never reach here: `rel` is repository-relative.
    pub fn shown_path(&self, rel: &str) -> String {
        if self.s.fs.exists(rel) || self.shows_computed(rel) {
            rel.to_string()
        } else {
            NOT_SHOWN.to_string()
        }
    }

    /// True when a computed text (a path, a file or variable name) may be
    /// shown: nothing was read as data yet, and it is short and printable.
    pub fn shows_computed(&self, text: &str) -> bool {
        !self.acc.data_read.get()
            && text.chars().count() <= MAX_SHOWN_PATH_CHARS
            && !text.chars().any(char::is_control)
    }

    /// Every `locals` attribute of this file, in order.
    pub fn local_attributes(&self) -> impl Iterator<Item = &Attribute> {
        self.file
            .body
            .get_blocks("locals")
            .flat_map(|b| b.body.attributes())
    }

    fn local_index(&self) -> &HashMap<String, (usize, usize)> {
        self.local_exprs.get_or_init(|| {
            let mut index = HashMap::new();
            for (b, structure) in self.file.body.iter().enumerate() {
                let Some(block) = structure
                    .as_block()
                    .filter(|b| b.ident.as_str() == "locals")
                else {
                    continue;
                };
                for (a, item) in block.body.iter().enumerate() {
                    if let Some(attr) = item.as_attribute() {
                        index.insert(attr.key.as_str().to_string(), (b, a));
                    }
                }
            }
            index
        })
    }

    /// The local attribute at a position [`Instance::local_index`] recorded.
    fn local_at(&self, (b, a): (usize, usize)) -> Option<&Attribute> {
        self.file
            .body
            .get(b)?
            .as_block()?
            .body
            .get(a)?
            .as_attribute()
    }

    /// `local.<name>`, evaluated on first use and remembered; a local that
    /// refers back to itself is an error, not a hang.
    pub fn local(
        &self,
        name: &str,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<Value, EvalError> {
        if let Some(done) = self.locals.borrow().get(name) {
            return match done {
                Ok(v) => self.budget().copy(v).map_err(|l| self.limit_error(span, l)),
                Err(e) => Err(e.clone()),
            };
        }
        let Some(&index) = self.local_index().get(name) else {
            return Err(self.error(
                span,
                format!("there is no local named `{name}` in {}", self.file.path),
            ));
        };
        if self.in_progress.borrow().contains(name) {
            return Err(self.error(span, format!("local.{name} refers to itself")));
        }
        self.budget()
            .check()
            .map_err(|l| self.limit_error(span.clone(), l))?;
        self.in_progress.borrow_mut().insert(name.to_string());
        let attr = self
            .local_at(index)
            .expect("index built from the same body");
        // A local is remembered once for every use, so it never sees the stage
        // it was first asked for in (a local naming `dependency` is refused).
        let stage = self.no_dependency.replace(false);
        let result = self.eval(&attr.value, None).and_then(|v| {
            self.budget()
                .value_depth(&v)
                .map_err(|l| self.limit_error(attr.value.span(), l))?;
            Ok(v)
        });
        self.no_dependency.set(stage);
        self.in_progress.borrow_mut().remove(name);
        let copy = match &result {
            Ok(v) => self.budget().copy(v).map_err(|l| self.limit_error(span, l)),
            Err(e) => Err(e.clone()),
        };
        self.locals.borrow_mut().insert(name.to_string(), result);
        copy
    }

    /// All locals as one object (for `read_terragrunt_config(...).locals`).
    pub fn all_locals(&self) -> Result<Value, EvalError> {
        let names: Vec<String> = self
            .local_attributes()
            .map(|a| a.key.as_str().to_string())
            .collect();
        let mut map = BTreeMap::new();
        for name in names {
            let v = self.local(&name, None)?;
            map.insert(name, v);
        }
        Ok(Value::Map(map))
    }

    pub fn includes(&self) -> &[IncludeRef<'a>] {
        self.includes.get().map(Vec::as_slice).unwrap_or(&[])
    }

    /// The include a directory function without a label refers to: the one
    /// named, or the only one there is.
    pub fn include_for(&self, label: Option<&str>) -> Option<&IncludeRef<'a>> {
        let includes = self.includes();
        match label {
            Some(l) => includes.iter().find(|i| i.label == l),
            None if includes.len() == 1 => includes.first(),
            None => None,
        }
    }

    pub fn attribute(&self, name: &str) -> Option<&Expression> {
        self.file.body.get_attribute(name).map(|a| &a.value)
    }
}

/// What a message says instead of a computed path it must not show.
pub const NOT_SHOWN: &str = "<a path computed from file contents, not shown>";
