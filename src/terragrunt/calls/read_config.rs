//! The two functions that evaluate another file: `read_terragrunt_config`
//! (the whole configuration, its own includes merged, memoised per file for
//! the run) and `read_tfvars_file` (a variables file, as JSON text).

use super::super::context::{Acc, EvalError, Instance, ReadConfig, Role, Session};
use super::super::fs::{Probe, UNIT_CONFIG_NAMES};
use super::super::limits::{Limit, MAX_CONFIG_FILE_BYTES, MAX_READ_DEPTH};
use super::super::parse::HclFile;
use super::super::paths;
use super::super::unit_config::{Merge, open_include};
use super::super::value::Value;
use super::{Base, READ_STACK, SpanRange};
use std::collections::BTreeMap;
use std::sync::Arc;

impl Instance<'_> {
    pub(super) fn read_terragrunt_config(
        &self,
        args: &[Value],
        span: SpanRange,
    ) -> Result<Value, EvalError> {
        let Some(mut target) = self.read_path("read_terragrunt_config", args, &span, Base::Unit)?
        else {
            return Ok(Value::unknown(
                "read_terragrunt_config() of an unknown path",
            ));
        };
        // A directory stands for its configuration file, as in Terragrunt.
        if self.probe("read_terragrunt_config", &target, &span)? == Probe::Dir {
            let dir = target.clone();
            target = UNIT_CONFIG_NAMES
                .iter()
                .map(|name| paths::join(&dir, name))
                .find(|file| self.s.fs.is_file(file))
                .unwrap_or_else(|| paths::join(&dir, "terragrunt.hcl"));
            self.acc.read_file(target.clone());
        }
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
            file: self.s.fs.physical(&target).into_owned(),
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
            let inst = reading(self.s, &acc, &file, &target, &self.original_dir);
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

    pub(super) fn read_tfvars_file(
        &self,
        args: &[Value],
        span: SpanRange,
    ) -> Result<Value, EvalError> {
        let Some(target) = self.read_path("read_tfvars_file", args, &span, Base::Unit)? else {
            return Ok(Value::unknown("read_tfvars_file() of an unknown path"));
        };
        self.probe("read_tfvars_file", &target, &span)?;
        if target.ends_with(".json") {
            return self.read_tfvars_json(&target, &span);
        }
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
        let inst = reading(self.s, &acc, &file, &target, &self.original_dir);
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

    /// A `.tfvars.json` file is returned as it is, once it is known to be a
    /// JSON object (Terragrunt checks, then hands the text back).
    fn read_tfvars_json(&self, target: &str, span: &SpanRange) -> Result<Value, EvalError> {
        let text = self
            .s
            .fs
            .read_text(target, MAX_CONFIG_FILE_BYTES)
            .map_err(|e| self.read_error("read_tfvars_file", target, &e, span))?;
        self.acc.data_read.set(true);
        self.budget()
            .charge((text.len() / super::super::limits::STRING_BYTES_PER_STEP) as u64)
            .map_err(|l| self.limit_error(span.clone(), l))?;
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(_)) => Ok(Value::String(text)),
            _ => Err(self.error(
                span.clone(),
                format!(
                    "read_tfvars_file(): {} is not a JSON object",
                    self.shown_path(target)
                ),
            )),
        }
    }
}

/// What `read_terragrunt_config` returns: the file's locals, and its
/// top-level attributes merged with those of its includes (as Terragrunt
/// parses the whole file, includes and all). Inputs may mention dependency
/// outputs, so an input that cannot be computed is unknown rather than an
/// error.
fn read_config_value(inst: &Instance<'_>) -> Result<Value, EvalError> {
    let mut strategies = Vec::new();
    let mut includes = Vec::new();
    for block in inst.file.body.get_blocks("include") {
        let label = block
            .labels
            .first()
            .map(|l| l.as_str().to_string())
            .unwrap_or_default();
        match open_include(inst.s, inst.acc, inst, block, &label) {
            Ok(Some((include, merge))) => {
                includes.push(include);
                strategies.push(merge);
            }
            Ok(None) => {}
            Err(problem) => {
                return Err(EvalError {
                    message: problem.message,
                    file: problem.file.unwrap_or_else(|| inst.file.path.clone()),
                    line: problem.line,
                    limit: None,
                });
            }
        }
    }
    let _ = inst.includes.set(includes);
    let mut map = BTreeMap::new();
    let merged = inst
        .includes()
        .iter()
        .zip(&strategies)
        .filter(|(_, m)| **m != Merge::Unmerged)
        .map(|(i, m)| (&i.instance, *m))
        .chain(std::iter::once((inst, Merge::Shallow)));
    for (source, merge) in merged {
        for attr in source.file.body.attributes() {
            let v = match source.eval(&attr.value, None) {
                Ok(v) => v,
                Err(e) if e.limit.is_some() => return Err(e),
                Err(e) => Value::unknown(e.message),
            };
            let key = attr.key.as_str().to_string();
            let v = match (map.remove(&key), v) {
                // Inputs combine key by key; the later file wins.
                (Some(Value::Map(earlier)), Value::Map(later)) if key == "inputs" => {
                    Value::Map(merge_maps(earlier, later, merge == Merge::Deep))
                }
                (_, v) => v,
            };
            map.insert(key, v);
        }
    }
    map.insert("locals".to_string(), inst.all_locals()?);
    Ok(Value::Map(map))
}

/// `later` over `earlier`: top-level keys replace, or with `deep`, maps merge
/// all the way down and lists concatenate (Terragrunt's merge strategies).
fn merge_maps(
    mut earlier: BTreeMap<String, Value>,
    later: BTreeMap<String, Value>,
    deep: bool,
) -> BTreeMap<String, Value> {
    for (k, v) in later {
        let v = match (deep, earlier.remove(&k), v) {
            (true, Some(Value::Map(a)), Value::Map(b)) => Value::Map(merge_maps(a, b, true)),
            (true, Some(Value::List(mut a)), Value::List(b)) => {
                a.extend(b);
                Value::List(a)
            }
            (_, _, v) => v,
        };
        earlier.insert(k, v);
    }
    earlier
}

/// The instance that evaluates `file` (at `target`) for a unit whose original
/// directory is `original_dir`: in the file's own directory, as a read file.
fn reading<'i>(
    s: &'i Session,
    acc: &'i Acc<'i>,
    file: &Arc<HclFile>,
    target: &str,
    original_dir: &str,
) -> Instance<'i> {
    Instance::new(
        s,
        acc,
        file.clone(),
        Role::Read,
        paths::parent(target).to_string(),
        original_dir.to_string(),
    )
}
