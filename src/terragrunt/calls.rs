//! Function calls: Terragrunt's directory and read functions, which depend on
//! the instance (which unit, which file), and the file functions whose
//! arguments join the read set. Everything that would execute something or
//! reach outside the repository is an unknown value, never a side effect.

use super::context::{EvalError, Instance, NOT_SHOWN, Role};
use super::eval::Vars;
use super::fs::{Probe, ReadError, UNIT_CONFIG_NAMES};
use super::funcs::call_pure;
use super::limits::{Limit, MAX_STRING_BYTES};
use super::paths;
use super::value::Value;
use hcl_edit::Span;
use hcl_edit::expr::FuncCall;
use std::cell::RefCell;

thread_local! {
    /// Files being read through `read_terragrunt_config` on this thread, to refuse cycles.
    static READ_STACK: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

type SpanRange = Option<std::ops::Range<usize>>;

mod read_config;

/// What a function resolves a relative path against, as Terragrunt does.
#[derive(Clone, Copy)]
enum Base {
    /// The directory of the file holding the call (OpenTofu's file functions:
    /// `file`, `fileexists`, `fileset`, `templatefile`, `filebase64`…).
    File,
    /// The directory of the configuration being parsed (`pctx.WorkingDir`):
    /// the unit even when the call sits in an included file, or the file a
    /// `read_terragrunt_config` is reading (`read_terragrunt_config`,
    /// `read_tfvars_file`, `sops_decrypt_file`, `mark_as_read`,
    /// `mark_glob_as_read`).
    Unit,
}

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
            "file" => self
                .read_path(name, args, &span, Base::File)
                .and_then(|p| match p {
                    None => Ok(Value::unknown("file() of an unknown path")),
                    Some(p) => self.file(&p, &span),
                }),
            "fileexists" => self
                .read_path(name, args, &span, Base::File)
                .and_then(|p| match p {
                    None => Ok(Value::unknown("fileexists() of an unknown path")),
                    Some(p) => Ok(Value::Bool(self.probe(name, &p, &span)? == Probe::File)),
                }),
            "mark_as_read" => self
                .read_path(name, args, &span, Base::Unit)
                .and_then(|p| match p {
                    None => Ok(Value::unknown("mark_as_read() of an unknown path")),
                    Some(p) => {
                        self.probe(name, &p, &span)?;
                        Ok(args[0].clone())
                    }
                }),
            "templatefile" | "filebase64" | "filemd5" | "filesha1" | "filesha256"
            | "filesha512" | "filebase64sha256" | "filebase64sha512" => {
                self.read_path(name, args, &span, Base::File).and_then(|p| {
                    if let Some(p) = p {
                        self.probe(name, &p, &span)?;
                    }
                    Ok(Value::unknown(format!(
                        "the result of {name}() is not evaluated by cascade"
                    )))
                })
            }
            "sops_decrypt_file" => self.read_path(name, args, &span, Base::Unit).and_then(|p| {
                if let Some(p) = p {
                    self.probe(name, &p, &span)?;
                }
                Ok(Value::unknown(
                    "sops_decrypt_file() is never decrypted by cascade",
                ))
            }),
            "fileset" => self.fileset(args, &span),
            "mark_glob_as_read" => self.mark_glob_as_read(args, &span),
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

    /// Resolves the path argument of a read function (against `base`) and
    /// records the read. `None` when the path is unknown, which makes the unit
    /// unresolved.
    fn read_path(
        &self,
        name: &str,
        args: &[Value],
        span: &SpanRange,
        base: Base,
    ) -> Result<Option<String>, EvalError> {
        if let Some(Value::Unknown(why)) = args.first() {
            self.unresolved_read(name, why, span);
            return Ok(None);
        }
        let path = self.path_arg(args, 0, span, self.base_dir(base))?;
        self.acc.read_file(path.clone());
        Ok(Some(path))
    }

    /// The directory a relative path given to a function is resolved against.
    fn base_dir(&self, base: Base) -> &str {
        match base {
            Base::File => self.file_dir(),
            Base::Unit => &self.tg_dir,
        }
    }

    fn unresolved_read(&self, name: &str, why: &str, span: &SpanRange) {
        let line = self.file.line_of(span.clone());
        self.acc.unresolved(
            &self.file.path,
            line,
            format!("cannot tell which file {name}() reads: its argument is unknown ({why})"),
        );
    }

    /// Resolves glob pattern argument `i` against `base` and records it in
    /// the read set. `None` when the pattern is unknown (the unit is then
    /// unresolved).
    fn read_glob(
        &self,
        name: &str,
        args: &[Value],
        i: usize,
        span: &SpanRange,
        base: &str,
    ) -> Result<Option<String>, EvalError> {
        match args.get(i) {
            Some(Value::Unknown(why)) => {
                self.unresolved_read(name, why, span);
                Ok(None)
            }
            Some(Value::String(pattern)) => {
                let glob = if pattern.starts_with('/') {
                    self.s
                        .resolve("", pattern)
                        .map_err(|m| self.error(span.clone(), m))?
                } else {
                    let mut rest = pattern.as_str();
                    while let Some(r) = rest.strip_prefix("./") {
                        rest = r;
                    }
                    paths::join(base, rest)
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

    /// The files under `dir` that `glob` (repo-relative) matches, paid for
    /// file by file; a directory through a link out of the repository is an error.
    fn glob_files(
        &self,
        name: &str,
        dir: &str,
        glob: &str,
        span: &SpanRange,
    ) -> Result<Vec<String>, EvalError> {
        self.probe(name, dir, span)?;
        let matcher = globset::GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            // globset's reasons quote characters of the pattern, which may be a file's contents.
            .map_err(|_| {
                self.error(
                    span.clone(),
                    format!(
                        "{name}(): the pattern is not a valid glob; check its brackets and braces"
                    ),
                )
            })?
            .compile_matcher();
        let files = self.s.fs.files_under(dir);
        self.budget()
            .charge(files.len() as u64)
            .map_err(|l| self.limit_error(span.clone(), l))?;
        Ok(files.into_iter().filter(|f| matcher.is_match(f)).collect())
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
        let prefix_len = if dir.is_empty() { 0 } else { dir.len() + 1 };
        let matches = self.glob_files("fileset", &dir, &glob, span)?;
        Ok(Value::List(
            matches
                .into_iter()
                .map(|f| Value::String(f[prefix_len..].to_string()))
                .collect(),
        ))
    }

    /// `mark_glob_as_read(pattern)`: the absolute paths of the files the
    /// pattern matches (resolved against the configuration being parsed, as
    /// Terragrunt does), each marked read; the pattern itself joins the read
    /// set, so a file added later that it matches plans the unit too.
    /// Terragrunt's leading `--terragrunt-boundary` argument is accepted; the
    /// boundary is always the repository.
    fn mark_glob_as_read(&self, args: &[Value], span: &SpanRange) -> Result<Value, EvalError> {
        let skip = match args.first() {
            Some(Value::String(a)) if a == "--terragrunt-boundary" => 2,
            Some(Value::String(a)) if a.starts_with("--terragrunt-boundary=") => 1,
            _ => 0,
        };
        let base = self.tg_dir.clone();
        let Some(glob) = self.read_glob("mark_glob_as_read", args, skip, span, &base)? else {
            return Ok(Value::unknown(
                "mark_glob_as_read() with an unknown pattern",
            ));
        };
        // Only the part of the pattern before its first wildcard needs walking.
        let fixed: Vec<&str> = glob
            .split('/')
            .take_while(|part| !part.contains(['*', '?', '[', '{', '\\']))
            .collect();
        let dir = if fixed.len() == glob.split('/').count() {
            paths::parent(&glob).to_string()
        } else {
            fixed.join("/")
        };
        let matches = self.glob_files("mark_glob_as_read", &dir, &glob, span)?;
        Ok(Value::List(
            matches
                .into_iter()
                .map(|f| {
                    let absolute = self.s.absolute(&f);
                    self.acc.read_file(f);
                    Value::String(absolute)
                })
                .collect(),
        ))
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
            // Without a name: whichever configuration file a directory has, JSON first.
            None | Some(Value::Null) => String::new(),
            Some(Value::String(n)) if n.is_empty() => String::new(),
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
        let names: Vec<&str> = if name.is_empty() {
            UNIT_CONFIG_NAMES.to_vec()
        } else {
            vec![name.as_str()]
        };
        let mut dir = self.tg_dir.as_str();
        'probing: while !dir.is_empty() {
            dir = paths::parent(dir);
            for name in &names {
                let Some(candidate) = paths::clean(&paths::join(dir, name)) else {
                    break 'probing;
                };
                self.acc.read_file(candidate.clone());
                if matches!(
                    self.probe("find_in_parent_folders", &candidate, &span)?,
                    Probe::File | Probe::Dir
                ) {
                    return Ok(self.s.absolute(&candidate).into());
                }
            }
        }
        let name = if name.is_empty() {
            "terragrunt.hcl"
        } else {
            name.as_str()
        };
        let shown = if self.shows_computed(name) {
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
}
