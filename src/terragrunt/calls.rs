//! Function calls: Terragrunt's directory and read functions, which depend on
//! the instance (which unit, which file), and the file functions whose
//! arguments join the read set. Everything that would execute something or
//! reach outside the repository is an unknown value, never a side effect.

use super::context::{Acc, EvalError, Instance, NOT_SHOWN, ReadConfig, Role};
use super::eval::Vars;
use super::fs::{Probe, ReadError};
use super::funcs::call_pure;
use super::limits::{Limit, MAX_READ_DEPTH, MAX_STRING_BYTES};
use super::paths;
use super::value::Value;
use hcl_edit::Span;
use hcl_edit::expr::FuncCall;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

thread_local! {
    /// Files being read through `read_terragrunt_config` on this thread, to refuse cycles.
    static READ_STACK: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

type SpanRange = Option<std::ops::Range<usize>>;

/// Forgets the reads in progress on this thread, after an evaluation that
/// did not finish normally (a panic caught by discovery).
pub fn forget_reads_in_progress() {
    READ_STACK.with(|st| st.borrow_mut().clear());
}

impl Instance<'_> {
    pub fn call(&self, call: &FuncCall, vars: Vars<'_>) -> Result<Value, EvalError> {
        let name = call.name.name.as_str();
        let span = call.span();
        if call.name.is_namespaced() {
            return Ok(Value::unknown(format!(
                "provider function {name}() is not evaluated by cascade"
            )));
        }
        // try() and can() catch errors, so their arguments are evaluated one by one.
        match name {
            "try" => return self.call_try(call, vars),
            "can" => {
                let arg = call
                    .args
                    .iter()
                    .next()
                    .ok_or_else(|| self.error(span.clone(), "can() takes one argument"))?;
                return Ok(match self.eval(arg, vars) {
                    Ok(Value::Unknown(why)) => Value::Unknown(why),
                    Ok(_) => Value::Bool(true),
                    // A limit is not an answer: the unit is unresolved instead.
                    Err(e) if e.limit.is_some() => return Err(e),
                    Err(_) => Value::Bool(false),
                });
            }
            _ => {}
        }
        let mut args = Vec::with_capacity(call.args.len());
        for arg in call.args.iter() {
            args.push(self.eval(arg, vars)?);
        }
        if call.args.expand_final()
            && let Some(last) = args.pop()
        {
            match last {
                Value::Unknown(why) => return Ok(Value::Unknown(why)),
                v => args.extend(v.elements().map_err(|m| self.error(span.clone(), m))?),
            }
        }
        let result = match self.call_context(name, &args, span.clone()) {
            Some(result) => result?,
            None => match call_pure(name, args, self.budget()) {
                Some(Ok(value)) => value,
                Some(Err(m)) => {
                    return Err(match self.budget().tripped() {
                        Some(t) => self.limit_error(span, t.limit),
                        None => self.error(span, format!("{name}(): {m}")),
                    });
                }
                None => {
                    return Ok(Value::unknown(format!(
                        "{name}() is not a function cascade evaluates"
                    )));
                }
            },
        };
        self.budget()
            .produced(&result)
            .map_err(|l| self.limit_error(span, l))?;
        Ok(result)
    }

    fn call_try(&self, call: &FuncCall, vars: Vars<'_>) -> Result<Value, EvalError> {
        let mut last = None;
        for arg in call.args.iter() {
            match self.eval(arg, vars) {
                Ok(v) => return Ok(v),
                // A limit is not a failure try() may pass over: that could pick a wrong edge.
                Err(e) if e.limit.is_some() => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| self.error(call.span(), "try() needs at least one argument")))
    }

    /// The functions that need to know where they are evaluated.
    fn call_context(
        &self,
        name: &str,
        args: &[Value],
        span: SpanRange,
    ) -> Option<Result<Value, EvalError>> {
        let s = self.s;
        let result = match name {
            "get_terragrunt_dir" => Ok(s.absolute(&self.tg_dir).into()),
            "get_original_terragrunt_dir" => Ok(s.absolute(&self.original_dir).into()),
            "get_parent_terragrunt_dir" => self
                .label(args, &span)
                .map(|l| s.absolute(&self.parent_dir(l)).into()),
            "path_relative_to_include" => self
                .label(args, &span)
                .map(|l| paths::relative(&self.parent_dir(l), &self.tg_dir).into()),
            "path_relative_from_include" => self
                .label(args, &span)
                .map(|l| paths::relative(&self.tg_dir, &self.parent_dir(l)).into()),
            "get_repo_root" => Ok(s.root_abs.clone().into()),
            "get_path_from_repo_root" => Ok(paths::display_dir(&self.tg_dir).to_string().into()),
            "get_path_to_repo_root" => Ok(paths::relative(&self.tg_dir, "").into()),
            "abspath" => self
                .path_arg(args, 0, &span, &self.tg_dir)
                .map(|p| s.absolute(&p).into()),
            "find_in_parent_folders" => self.find_in_parent_folders(args, span),
            "read_terragrunt_config" => self.read_terragrunt_config(args, span),
            "read_tfvars_file" => self.read_tfvars_file(args, span),
            "file" => self.read_path(name, args, &span).and_then(|p| match p {
                None => Ok(Value::unknown("file() of an unknown path")),
                Some(p) => self.file(&p, &span),
            }),
            "fileexists" => self.read_path(name, args, &span).and_then(|p| match p {
                None => Ok(Value::unknown("fileexists() of an unknown path")),
                Some(p) => Ok(Value::Bool(self.probe(name, &p, &span)? == Probe::File)),
            }),
            "mark_as_read" => self.read_path(name, args, &span).map(|p| match p {
                None => Value::unknown("mark_as_read() of an unknown path"),
                Some(_) => args[0].clone(),
            }),
            "templatefile" | "filebase64" | "filemd5" | "filesha1" | "filesha256"
            | "filesha512" | "filebase64sha256" | "filebase64sha512" => {
                self.read_path(name, args, &span).map(|_| {
                    Value::unknown(format!(
                        "the result of {name}() is not evaluated by cascade"
                    ))
                })
            }
            "sops_decrypt_file" => self
                .read_path(name, args, &span)
                .map(|_| Value::unknown("sops_decrypt_file() is never decrypted by cascade")),
            "fileset" => self.fileset(args, &span),
            "mark_glob_as_read" => self.read_glob(name, args, 0, &span, "").map(|_| {
                Value::unknown("the result of mark_glob_as_read() is not evaluated by cascade")
            }),
            "get_env" => self.get_env(args, &span),
            "run_cmd" => Ok(Value::unknown("run_cmd() is never executed by cascade")),
            "get_aws_account_id"
            | "get_aws_account_alias"
            | "get_aws_caller_identity_arn"
            | "get_aws_caller_identity_user_id" => Ok(Value::unknown(format!(
                "{name}() would call AWS; cascade never does"
            ))),
            "get_working_dir" => Ok(Value::unknown(
                "get_working_dir() depends on Terragrunt's download directory",
            )),
            "get_platform" => Ok(std::env::consts::OS.into()),
            "get_terraform_command" => Ok("plan".into()),
            "get_terraform_cli_args" => Ok(Value::List(vec!["plan".into()])),
            "get_terragrunt_source_cli_flag" => Ok("".into()),
            "get_default_retryable_errors" => Ok(Value::List(Vec::new())),
            "get_terraform_commands_that_need_vars"
            | "get_terraform_commands_that_need_locking"
            | "get_terraform_commands_that_need_input"
            | "get_terraform_commands_that_need_parallelism" => Ok(Value::List(
                [
                    "apply", "console", "destroy", "import", "plan", "push", "refresh",
                ]
                .map(Value::from)
                .to_vec(),
            )),
            _ => return None,
        };
        Some(result)
    }

    /// `file()`: the file's text, read within the string limit. From here on
    /// the unit has read data, so computed paths are no longer shown.
    fn file(&self, rel: &str, span: &SpanRange) -> Result<Value, EvalError> {
        match self.s.fs.read_text(rel, MAX_STRING_BYTES as u64) {
            Ok(text) => {
                self.acc.data_read.set(true);
                self.budget()
                    .charge((text.len() / super::limits::STRING_BYTES_PER_STEP) as u64)
                    .map_err(|l| self.limit_error(span.clone(), l))?;
                Ok(Value::String(text))
            }
            Err(ReadError::TooLarge { .. }) => {
                let limit = self.budget().trip(Limit::StringBytes);
                Err(self.limit_error(span.clone(), limit))
            }
            Err(e) => Err(self.read_error("file", rel, &e, span)),
        }
    }

    /// What a path is, for a function that names it; a path that leads outside
    /// the repository is an error, never an answer.
    fn probe(&self, name: &str, rel: &str, span: &SpanRange) -> Result<Probe, EvalError> {
        match self.s.fs.probe(rel) {
            Probe::Escapes => Err(self.read_error(name, rel, &ReadError::Escapes, span)),
            probe => Ok(probe),
        }
    }

    /// `name(): cannot read <path>: <why>`, naming the path only as [`Instance::shown_path`] allows.
    pub fn read_error(
        &self,
        name: &str,
        rel: &str,
        why: &ReadError,
        span: &SpanRange,
    ) -> EvalError {
        let shown = match why {
            // The link's path exists in the repository even though its target is refused.
            ReadError::Escapes => self.shown_link(rel),
            _ => self.shown_path(rel),
        };
        self.error(
            span.clone(),
            format!("{name}(): cannot read {shown}: {why}"),
        )
    }

    /// A path through a refused link: shown when the configuration wrote it.
    fn shown_link(&self, rel: &str) -> String {
        if self.shows_computed(rel) {
            rel.to_string()
        } else {
            NOT_SHOWN.to_string()
        }
    }

    /// The optional include label argument of the directory functions.
    fn label<'v>(&self, args: &'v [Value], span: &SpanRange) -> Result<Option<&'v str>, EvalError> {
        match args.first() {
            None => Ok(None),
            Some(Value::String(l)) => Ok(Some(l)),
            Some(other) => Err(self.error(
                span.clone(),
                format!(
                    "an include label must be a string, found {}",
                    other.type_name()
                ),
            )),
        }
    }

    /// `get_parent_terragrunt_dir()` in this instance: the included file's
    /// directory inside an include, the named (or only) include's directory in
    /// the unit, and the file's own directory otherwise.
    fn parent_dir(&self, label: Option<&str>) -> String {
        match &self.role {
            Role::Include { parent_dir } => parent_dir.clone(),
            Role::Unit => match self.include_for(label) {
                Some(include) => include.instance.file.dir().to_string(),
                None => self.tg_dir.clone(),
            },
            Role::Read => self.tg_dir.clone(),
        }
    }

    fn path_arg(
        &self,
        args: &[Value],
        i: usize,
        span: &SpanRange,
        base: &str,
    ) -> Result<String, EvalError> {
        match args.get(i) {
            Some(Value::String(p)) => self
                .s
                .resolve(base, p)
                .map_err(|m| self.error(span.clone(), m)),
            Some(other) => Err(self.error(
                span.clone(),
                format!("expected a path, found {}", other.type_name()),
            )),
            None => Err(self.error(span.clone(), "missing path argument")),
        }
    }

    /// Resolves the path argument of a read function against the calling
    /// file's directory and records the read. `None` when the path is unknown,
    /// which makes the unit unresolved.
    fn read_path(
        &self,
        name: &str,
        args: &[Value],
        span: &SpanRange,
    ) -> Result<Option<String>, EvalError> {
        if let Some(Value::Unknown(why)) = args.first() {
            self.unresolved_read(name, why, span);
            return Ok(None);
        }
        let path = self.path_arg(args, 0, span, self.file_dir())?;
        self.acc.read_file(path.clone());
        Ok(Some(path))
    }

    fn unresolved_read(&self, name: &str, why: &str, span: &SpanRange) {
        let line = self.file.line_of(span.clone());
        self.acc.unresolved(
            &self.file.path,
            line,
            format!("cannot tell which file {name}() reads: its argument is unknown ({why})"),
        );
    }

    fn read_glob(
        &self,
        name: &str,
        args: &[Value],
        i: usize,
        span: &SpanRange,
        dir: &str,
    ) -> Result<Option<String>, EvalError> {
        match args.get(i) {
            Some(Value::Unknown(why)) => {
                self.unresolved_read(name, why, span);
                Ok(None)
            }
            Some(Value::String(pattern)) => {
                let base = if dir.is_empty() {
                    self.file_dir().to_string()
                } else {
                    dir.to_string()
                };
                let glob = if pattern.starts_with('/') {
                    self.s
                        .resolve("", pattern)
                        .map_err(|m| self.error(span.clone(), m))?
                } else {
                    paths::join(&base, pattern.trim_start_matches("./"))
                };
                self.acc.read_glob(glob.clone());
                Ok(Some(glob))
            }
            _ => Err(self.error(
                span.clone(),
                format!("{name}() expects a glob pattern string"),
            )),
        }
    }

    fn fileset(&self, args: &[Value], span: &SpanRange) -> Result<Value, EvalError> {
        let dir = match args.first() {
            Some(Value::Unknown(why)) => {
                self.unresolved_read("fileset", why, span);
                return Ok(Value::Unknown(why.clone()));
            }
            _ => self.path_arg(args, 0, span, self.file_dir())?,
        };
        self.probe("fileset", &dir, span)?;
        let Some(glob) = self.read_glob("fileset", args, 1, span, &dir)? else {
            return Ok(Value::unknown("fileset() with an unknown pattern"));
        };
        let matcher = globset::GlobBuilder::new(&glob)
            .literal_separator(true)
            .build()
            // globset's reasons quote characters of the pattern, which may be a file's contents.
            .map_err(|_| {
                self.error(
                    span.clone(),
                    "fileset(): the pattern is not a valid glob; check its brackets and braces",
                )
            })?
            .compile_matcher();
        let prefix_len = if dir.is_empty() { 0 } else { dir.len() + 1 };
        let files = self.s.fs.files_under(&dir);
        self.budget()
            .charge(files.len() as u64)
            .map_err(|l| self.limit_error(span.clone(), l))?;
        let matches = files
            .into_iter()
            .filter(|f| matcher.is_match(f))
            .map(|f| Value::String(f[prefix_len..].to_string()));
        Ok(Value::List(matches.collect()))
    }

    fn get_env(&self, args: &[Value], span: &SpanRange) -> Result<Value, EvalError> {
        let name = match args.first() {
            Some(Value::String(n)) => n,
            _ => return Err(self.error(span.clone(), "get_env() expects a variable name")),
        };
        Ok(match (self.s.env.get(name), args.get(1)) {
            (Some(v), _) => Value::String(v.clone()),
            (None, Some(default)) => default.clone(),
            (None, None) if self.shows_computed(name) => Value::unknown(format!(
                "environment variable {name} is not set for discovery"
            )),
            (None, None) => Value::unknown("an environment variable is not set for discovery"),
        })
    }

    /// Probes each parent directory of the context directory, up to the
    /// repository root. Every probe joins the read set: adding a nearer file
    /// changes what the unit reads.
    fn find_in_parent_folders(&self, args: &[Value], span: SpanRange) -> Result<Value, EvalError> {
        let name = match args.first() {
            None => "terragrunt.hcl".to_string(),
            Some(Value::String(n)) => n.trim_start_matches("./").to_string(),
            Some(Value::Unknown(why)) => {
                self.unresolved_read("find_in_parent_folders", why, &span);
                return Ok(Value::Unknown(why.clone()));
            }
            Some(other) => {
                return Err(self.error(
                    span,
                    format!(
                        "find_in_parent_folders() expects a file name, found {}",
                        other.type_name()
                    ),
                ));
            }
        };
        let mut dir = self.tg_dir.as_str();
        while !dir.is_empty() {
            dir = paths::parent(dir);
            let Some(candidate) = paths::clean(&paths::join(dir, &name)) else {
                break;
            };
            self.acc.read_file(candidate.clone());
            if matches!(
                self.probe("find_in_parent_folders", &candidate, &span)?,
                Probe::File | Probe::Dir
            ) {
                return Ok(self.s.absolute(&candidate).into());
            }
        }
        let shown = if self.shows_computed(&name) {
            format!("`{name}`")
        } else {
            "such file".to_string()
        };
        match args.get(1) {
            Some(fallback) => Ok(fallback.clone()),
            None => Err(self.error(
                span,
                format!("find_in_parent_folders(): no {shown} in any parent folder of {} up to the repository root", paths::display_dir(&self.tg_dir)),
            )),
        }
    }

    fn read_terragrunt_config(&self, args: &[Value], span: SpanRange) -> Result<Value, EvalError> {
        let Some(target) = self.read_path("read_terragrunt_config", args, &span)? else {
            return Ok(Value::unknown(
                "read_terragrunt_config() of an unknown path",
            ));
        };
        if self.probe("read_terragrunt_config", &target, &span)? != Probe::File {
            return match args.get(1) {
                Some(default) => Ok(default.clone()),
                None => Err(self.error(
                    span,
                    format!(
                        "read_terragrunt_config(): {} does not exist",
                        self.shown_path(&target)
                    ),
                )),
            };
        }
        let depth = READ_STACK.with(|st| st.borrow().len());
        if depth >= MAX_READ_DEPTH {
            let limit = self.budget().trip(Limit::ReadDepth);
            return Err(self.limit_error(span, limit));
        }
        if READ_STACK.with(|st| st.borrow().contains(&target)) {
            return Err(self.error(
                span,
                format!("read_terragrunt_config(): {target} reads itself through a cycle"),
            ));
        }
        let file = self.s.parse(&target).map_err(|e| EvalError {
            message: format!(
                "read_terragrunt_config(): {target} does not parse: {}",
                e.message
            ),
            file: target.clone(),
            line: e.line,
            limit: None,
        })?;
        // Only a file that asks for the original directory depends on which unit reads it.
        let uses_original = file.calls("get_original_terragrunt_dir");
        let key = (
            target.clone(),
            uses_original.then(|| self.original_dir.clone()),
        );
        let budget = self.budget();
        let compute = || {
            READ_STACK.with(|st| st.borrow_mut().push(target.clone()));
            let acc = Acc::new(budget);
            let inst = Instance::new(
                self.s,
                &acc,
                file.clone(),
                Role::Read,
                paths::parent(&target).to_string(),
                self.original_dir.clone(),
            );
            let value = read_config_value(&inst);
            READ_STACK.with(|st| st.borrow_mut().pop());
            Arc::new(ReadConfig {
                value,
                reads: acc.reads.take(),
                unresolved: acc.unresolved.take(),
                data_read: acc.data_read.get(),
                complete: budget.tripped().is_none(),
            })
        };
        let result = self
            .s
            .read_configs
            .get_or_redo(&key, compute, |r| r.complete);
        self.acc
            .merge(&result.reads, &result.unresolved, result.data_read);
        match &result.value {
            Ok(value) => budget.copy(value).map_err(|l| self.limit_error(span, l)),
            Err(e) => Err(e.clone()),
        }
    }

    fn read_tfvars_file(&self, args: &[Value], span: SpanRange) -> Result<Value, EvalError> {
        let Some(target) = self.read_path("read_tfvars_file", args, &span)? else {
            return Ok(Value::unknown("read_tfvars_file() of an unknown path"));
        };
        self.probe("read_tfvars_file", &target, &span)?;
        let file = self.s.parse(&target).map_err(|e| {
            self.error(
                span.clone(),
                format!(
                    "read_tfvars_file(): {}: {}",
                    self.shown_path(&target),
                    e.message
                ),
            )
        })?;
        // Variable values are data: from here on computed paths are not shown.
        self.acc.data_read.set(true);
        let acc = Acc::new(self.budget());
        let inst = Instance::new(
            self.s,
            &acc,
            file.clone(),
            Role::Read,
            paths::parent(&target).to_string(),
            self.original_dir.clone(),
        );
        let mut map = BTreeMap::new();
        for attr in file.body.attributes() {
            map.insert(attr.key.as_str().to_string(), inst.eval(&attr.value, None)?);
        }
        self.acc
            .merge(&acc.reads.take(), &acc.unresolved.take(), true);
        match Value::Map(map).to_json() {
            Ok(json) => Ok(Value::String(json.to_string())),
            Err(why) => Ok(Value::unknown(why)),
        }
    }
}

/// What `read_terragrunt_config` returns: the file's locals, inputs and
/// top-level attributes. Inputs may mention dependency outputs, so an input
/// that cannot be computed is unknown rather than an error.
fn read_config_value(inst: &Instance<'_>) -> Result<Value, EvalError> {
    let mut map = BTreeMap::new();
    map.insert("locals".to_string(), inst.all_locals()?);
    for attr in inst.file.body.attributes() {
        let v = match inst.eval(&attr.value, None) {
            Ok(v) => v,
            Err(e) if e.limit.is_some() => return Err(e),
            Err(e) => Value::unknown(e.message),
        };
        map.insert(attr.key.as_str().to_string(), v);
    }
    Ok(Value::Map(map))
}
