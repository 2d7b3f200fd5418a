//! The expression evaluator: HCL expressions, templates, operators and
//! for-expressions over [`Value`], with unknowns propagating. Variables that
//! depend on the unit (`local`, `include`, `dependency`, `feature`, `values`)
//! are resolved lazily, so only what an edge or a read needs is evaluated.

use super::context::{EvalError, Instance};
use super::limits::{Limit, MAX_STRING_BYTES, STRING_BYTES_PER_STEP};
use super::parse::unmark_key;
use super::value::Value;
use hcl_edit::Decorated;
use hcl_edit::Span;
use hcl_edit::expr::{
    BinaryOperator, Expression, ForExpr, ObjectKey, TraversalOperator, UnaryOperator,
};
use hcl_edit::template::{Directive, Element, Template};
use std::collections::BTreeMap;

/// Variables bound by `for` expressions and directives, innermost first.
pub struct Frame<'v> {
    pub name: &'v str,
    pub value: Value,
    pub parent: Vars<'v>,
}

pub type Vars<'v> = Option<&'v Frame<'v>>;

fn lookup<'v>(vars: Vars<'v>, name: &str) -> Option<&'v Value> {
    let mut frame = vars;
    while let Some(f) = frame {
        if f.name == name {
            return Some(&f.value);
        }
        frame = f.parent;
    }
    None
}

type Ops = [Decorated<TraversalOperator>];

impl Instance<'_> {
    /// Evaluates `expr` in this instance, paying one step and one nesting
    /// level of the unit's budget.
    pub fn eval(&self, expr: &Expression, vars: Vars<'_>) -> Result<Value, EvalError> {
        let _level = self
            .budget()
            .enter()
            .map_err(|l| self.limit_error(expr.span(), l))?;
        self.eval_expr(expr, vars)
    }

    /// Turns a limit into this expression's error.
    fn bounded<T>(&self, result: Result<T, Limit>, expr: &Expression) -> Result<T, EvalError> {
        result.map_err(|l| self.limit_error(expr.span(), l))
    }

    fn eval_expr(&self, expr: &Expression, vars: Vars<'_>) -> Result<Value, EvalError> {
        match expr {
            Expression::Null(_) => Ok(Value::Null),
            Expression::Bool(b) => Ok(Value::Bool(*b.value())),
            Expression::Number(n) => Ok(Value::Number(n.as_f64().unwrap_or(f64::NAN))),
            Expression::String(s) => {
                self.bounded(self.budget().string_len(s.value().len()), expr)?;
                Ok(Value::String(s.value().clone()))
            }
            Expression::Array(items) => {
                self.bounded(self.budget().collection_len(items.len()), expr)?;
                items
                    .iter()
                    .map(|e| self.eval(e, vars))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::List)
            }
            Expression::Object(object) => {
                self.bounded(self.budget().collection_len(object.len()), expr)?;
                let mut map = BTreeMap::new();
                for (key, value) in object.iter() {
                    let key = match key {
                        ObjectKey::Ident(id) => id.as_str().to_string(),
                        ObjectKey::Expression(e) => match self.eval(e, vars)? {
                            Value::Unknown(why) => return Ok(Value::Unknown(why)),
                            other => other
                                .to_template_string()
                                .map_err(|m| self.error(e.span(), m))?,
                        },
                    };
                    // Go HCL keeps the last of repeated keys: later inserts win.
                    map.insert(unmark_key(&key).to_string(), self.eval(value.expr(), vars)?);
                }
                Ok(Value::Map(map))
            }
            Expression::StringTemplate(t) => match single_interpolation(t) {
                // `"${x}"` is x itself, whatever its type (Go HCL's template unwrapping;
                // HCL JSON writes every expression this way).
                Some(inner) => self.eval(inner, vars),
                None => self.eval_template(t, vars),
            },
            Expression::HeredocTemplate(h) => self.eval_template(&h.template, vars),
            Expression::Parenthesis(p) => self.eval(p.inner(), vars),
            Expression::Variable(v) => match lookup(vars, v.as_str()) {
                Some(value) => self.bounded(self.budget().copy(value), expr),
                None => self
                    .root_variable(v.as_str(), &[], expr.span())
                    .map(|(value, _)| value),
            },
            Expression::Conditional(c) => {
                let cond = self.eval(&c.cond_expr, vars)?;
                if let Value::Unknown(why) = cond {
                    // Both branches may read files; record both, decide nothing.
                    self.eval(&c.true_expr, vars)?;
                    self.eval(&c.false_expr, vars)?;
                    return Ok(Value::Unknown(why));
                }
                let cond = cond
                    .as_bool()
                    .map_err(|m| self.error(c.cond_expr.span(), m))?;
                self.eval(if cond { &c.true_expr } else { &c.false_expr }, vars)
            }
            Expression::FuncCall(call) => self.call(call, vars),
            Expression::Traversal(t) => {
                let (base, consumed) = match &t.expr {
                    Expression::Variable(v) if lookup(vars, v.as_str()).is_none() => {
                        self.root_variable(v.as_str(), &t.operators, t.expr.span())?
                    }
                    other => (self.eval(other, vars)?, 0),
                };
                self.bounded(self.budget().charge(t.operators.len() as u64), expr)?;
                self.traverse(base, &t.operators[consumed..], vars, expr)
            }
            Expression::UnaryOp(op) => {
                let v = self.eval(&op.expr, vars)?;
                if v.is_unknown() {
                    return Ok(v);
                }
                match op.operator.value() {
                    UnaryOperator::Neg => v.as_number().map(|n| Value::Number(-n)),
                    UnaryOperator::Not => v.as_bool().map(|b| Value::Bool(!b)),
                }
                .map_err(|m| self.error(expr.span(), m))
            }
            Expression::BinaryOp(op) => {
                let lhs = self.eval(&op.lhs_expr, vars)?;
                let rhs = self.eval(&op.rhs_expr, vars)?;
                binary(*op.operator.value(), lhs, rhs).map_err(|m| self.error(expr.span(), m))
            }
            Expression::ForExpr(f) => self.eval_for(f, vars, expr),
        }
    }

    fn traverse(
        &self,
        mut value: Value,
        ops: &Ops,
        vars: Vars<'_>,
        expr: &Expression,
    ) -> Result<Value, EvalError> {
        for (i, op) in ops.iter().enumerate() {
            if value.is_unknown() {
                return Ok(value);
            }
            value = match op.value() {
                TraversalOperator::GetAttr(name) => {
                    get_attr(value, name.as_str()).map_err(|m| self.error(expr.span(), m))?
                }
                TraversalOperator::Index(index) => {
                    let key = self.eval(index, vars)?;
                    if key.is_unknown() {
                        return Ok(key);
                    }
                    get_index(value, &key).map_err(|m| self.error(index.span(), m))?
                }
                TraversalOperator::LegacyIndex(n) => {
                    get_index(value, &Value::Number(*n.value() as f64))
                        .map_err(|m| self.error(expr.span(), m))?
                }
                TraversalOperator::AttrSplat(_) | TraversalOperator::FullSplat(_) => {
                    let items = match value {
                        Value::Null => Vec::new(),
                        Value::List(items) => items,
                        other => vec![other],
                    };
                    let rest = &ops[i + 1..];
                    // Each splat recurses once more: a chain of them is nesting like any other.
                    let _level = self.bounded(self.budget().enter(), expr)?;
                    let out = items
                        .into_iter()
                        .map(|item| self.traverse(item, rest, vars, expr))
                        .collect::<Result<Vec<_>, _>>()?;
                    return Ok(Value::List(out));
                }
            };
        }
        Ok(value)
    }

    /// Resolves a variable that is not bound by a `for`: the Terragrunt
    /// namespaces. Returns the value and how many traversal operators it used.
    fn root_variable(
        &self,
        name: &str,
        ops: &Ops,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<(Value, usize), EvalError> {
        let attr = |i: usize| match ops.get(i).map(|o| o.value()) {
            Some(TraversalOperator::GetAttr(id)) => Some(id.as_str()),
            _ => None,
        };
        match name {
            "local" => match attr(0) {
                Some(local) => Ok((self.local(local, span)?, 1)),
                None => Err(self.error(span, "use `local.<name>` to refer to a local")),
            },
            "include" => self.include_variable(attr(0), attr(1), attr(2), span),
            "dependency" if self.without_dependency() => Err(self.error(
                span,
                "there is no `dependency` variable here (Terragrunt evaluates this before it reads dependency outputs)",
            )),
            "dependency" => Ok((
                Value::unknown("dependency outputs are only known after the dependency is applied"),
                ops.len(),
            )),
            "feature" => match (attr(0), attr(1)) {
                (Some(flag), Some("value")) => match self.features.get(flag) {
                    Some(v) => Ok((self.copy(v, span)?, 2)),
                    None => {
                        Err(self.error(span, format!("there is no feature flag named `{flag}`")))
                    }
                },
                _ => Err(self.error(span, "use `feature.<name>.value` to read a feature flag")),
            },
            "values" => match attr(0) {
                Some(key) => match self.values.get(key) {
                    Some(v) => Ok((self.copy(v, span)?, 1)),
                    None => {
                        Err(self.error(span, format!("terragrunt.values.hcl has no value `{key}`")))
                    }
                },
                None => {
                    let mut all = BTreeMap::new();
                    for (k, v) in self.values.iter() {
                        all.insert(k.clone(), self.copy(v, span.clone())?);
                    }
                    Ok((Value::Map(all), 0))
                }
            },
            "unit" | "stack" if self.components.contains_key(name) => {
                Ok((self.copy(&self.components[name], span)?, 0))
            }
            "path" | "var" | "each" | "count" | "self" | "terraform" => Ok((
                Value::unknown(format!("`{name}` is only known to terraform at plan time")),
                ops.len(),
            )),
            other => Err(self.error(span, format!("unknown variable `{other}`"))),
        }
    }

    /// `include.<label>.<section>[.<name>]` — only exposed includes are visible.
    fn include_variable(
        &self,
        label: Option<&str>,
        section: Option<&str>,
        name: Option<&str>,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<(Value, usize), EvalError> {
        let Some(label) = label else {
            return Err(self.error(
                span,
                "use `include.<label>.locals.<name>` to read an exposed include",
            ));
        };
        let Some(include) = self.includes().iter().find(|i| i.label == label) else {
            return Err(self.error(span, format!("there is no include labelled `{label}`")));
        };
        if !include.expose {
            return Err(self.error(
                span,
                format!("include `{label}` is not exposed; add `expose = true` to read its values"),
            ));
        }
        let inst = &include.instance;
        match (section, name) {
            (Some("locals"), Some(local)) => Ok((inst.local(local, span)?, 3)),
            (Some("locals"), None) => Ok((inst.all_locals()?, 2)),
            (Some(attribute), _) => match inst.attribute(attribute) {
                Some(expr) => Ok((inst.eval(expr, None)?, 2)),
                None => Ok((
                    Value::unknown(format!(
                        "include.{label}.{attribute} is not evaluated by cascade"
                    )),
                    2,
                )),
            },
            (None, _) => Ok((
                Value::unknown(format!(
                    "include.{label} as a whole is not evaluated by cascade"
                )),
                1,
            )),
        }
    }

    fn eval_template(&self, template: &Template, vars: Vars<'_>) -> Result<Value, EvalError> {
        let mut out = String::new();
        match self.render(template, vars, &mut out)? {
            Some(why) => Ok(Value::Unknown(why)),
            None => Ok(Value::String(out)),
        }
    }

    /// Appends to a template's output, within the string limit.
    fn push_rendered(
        &self,
        out: &mut String,
        text: &str,
        expr: &Expression,
    ) -> Result<(), EvalError> {
        self.bounded(self.budget().string_len(out.len() + text.len()), expr)?;
        self.bounded(
            self.budget()
                .charge((text.len() / STRING_BYTES_PER_STEP) as u64),
            expr,
        )?;
        out.push_str(text);
        Ok(())
    }

    /// Renders into `out`; returns the reason if some part is unknown.
    fn render(
        &self,
        template: &Template,
        vars: Vars<'_>,
        out: &mut String,
    ) -> Result<Option<std::sync::Arc<str>>, EvalError> {
        let mut unknown = None;
        for element in template.iter() {
            match element {
                Element::Literal(s) => {
                    if out.len() + s.value().len() > MAX_STRING_BYTES {
                        let l = self.budget().trip(Limit::StringBytes);
                        return Err(self.limit_error(s.span(), l));
                    }
                    out.push_str(s.value())
                }
                Element::Interpolation(i) => match self.eval(&i.expr, vars)? {
                    Value::Unknown(why) => unknown = unknown.or(Some(why)),
                    v => {
                        let text = v
                            .to_template_string()
                            .map_err(|m| self.error(i.expr.span(), m))?;
                        self.push_rendered(out, &text, &i.expr)?;
                    }
                },
                Element::Directive(d) => match d.as_ref() {
                    Directive::If(dir) => match self.eval(&dir.if_expr.cond_expr, vars)? {
                        Value::Unknown(why) => unknown = unknown.or(Some(why)),
                        cond => {
                            let cond = cond
                                .as_bool()
                                .map_err(|m| self.error(dir.if_expr.cond_expr.span(), m))?;
                            let branch = if cond {
                                Some(&dir.if_expr.template)
                            } else {
                                dir.else_expr.as_ref().map(|e| &e.template)
                            };
                            if let Some(t) = branch {
                                unknown = unknown.or(self.render(t, vars, out)?);
                            }
                        }
                    },
                    Directive::For(dir) => {
                        let f = &dir.for_expr;
                        match self.eval(&f.collection_expr, vars)? {
                            Value::Unknown(why) => unknown = unknown.or(Some(why)),
                            collection => {
                                for (k, v) in iterate(collection)
                                    .map_err(|m| self.error(f.collection_expr.span(), m))?
                                {
                                    // A loop with a bare literal body evaluates nothing: pay per turn.
                                    self.bounded(self.budget().charge(1), &f.collection_expr)?;
                                    let value_frame = Frame {
                                        name: f.value_var.as_str(),
                                        value: v,
                                        parent: vars,
                                    };
                                    let key_frame;
                                    let inner = match &f.key_var {
                                        Some(key) => {
                                            key_frame = Frame {
                                                name: key.as_str(),
                                                value: k,
                                                parent: Some(&value_frame),
                                            };
                                            Some(&key_frame)
                                        }
                                        None => Some(&value_frame),
                                    };
                                    unknown = unknown.or(self.render(&f.template, inner, out)?);
                                }
                            }
                        }
                    }
                },
            }
        }
        Ok(unknown)
    }

    fn eval_for(&self, f: &ForExpr, vars: Vars<'_>, expr: &Expression) -> Result<Value, EvalError> {
        let collection = self.eval(&f.intro.collection_expr, vars)?;
        if let Value::Unknown(why) = collection {
            if super::reads::calls_read_function(expr) {
                let line = self.file.line_of(expr.span());
                self.acc.unresolved(
                    &self.file.path,
                    line,
                    format!("files read in this `for` expression cannot be known: its collection is unknown ({why})"),
                );
            }
            return Ok(Value::Unknown(why));
        }
        let mut list = Vec::new();
        let mut map: BTreeMap<String, Value> = BTreeMap::new();
        let mut groups: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for (k, v) in
            iterate(collection).map_err(|m| self.error(f.intro.collection_expr.span(), m))?
        {
            let value_frame = Frame {
                name: f.intro.value_var.as_str(),
                value: v,
                parent: vars,
            };
            let key_frame;
            let inner = match &f.intro.key_var {
                Some(key) => {
                    key_frame = Frame {
                        name: key.as_str(),
                        value: k,
                        parent: Some(&value_frame),
                    };
                    Some(&key_frame)
                }
                None => Some(&value_frame),
            };
            if let Some(cond) = &f.cond {
                match self.eval(&cond.expr, inner)? {
                    Value::Unknown(why) => return Ok(Value::Unknown(why)),
                    c => {
                        if !c.as_bool().map_err(|m| self.error(cond.expr.span(), m))? {
                            continue;
                        }
                    }
                }
            }
            let value = self.eval(&f.value_expr, inner)?;
            self.bounded(
                self.budget()
                    .collection_len(list.len().max(map.len()).max(groups.len()) + 1),
                expr,
            )?;
            match &f.key_expr {
                None => list.push(value),
                Some(key_expr) => {
                    let key = match self.eval(key_expr, inner)? {
                        Value::Unknown(why) => return Ok(Value::Unknown(why)),
                        k => k
                            .to_template_string()
                            .map_err(|m| self.error(key_expr.span(), m))?,
                    };
                    if f.grouping {
                        groups.entry(key).or_default().push(value);
                    } else if map.insert(key, value).is_some() {
                        return Err(self.error(
                            expr.span(),
                            "two elements of this for expression have the same key; use `...` after the value to group them",
                        ));
                    }
                }
            }
        }
        Ok(match &f.key_expr {
            None => Value::List(list),
            Some(_) if f.grouping => Value::Map(
                groups
                    .into_iter()
                    .map(|(k, v)| (k, Value::List(v)))
                    .collect(),
            ),
            Some(_) => Value::Map(map),
        })
    }
}

/// The expression of a template that is one interpolation and nothing else.
fn single_interpolation(template: &Template) -> Option<&Expression> {
    let mut elements = template.iter();
    match (elements.next(), elements.next()) {
        (Some(Element::Interpolation(i)), None) => Some(&i.expr),
        _ => None,
    }
}

/// (key, value) pairs of a collection: index for lists, key for maps.
pub fn iterate(collection: Value) -> Result<Vec<(Value, Value)>, String> {
    match collection {
        Value::List(items) => Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Value::Number(i as f64), v))
            .collect()),
        Value::Map(map) => Ok(map
            .into_iter()
            .map(|(k, v)| (Value::String(k), v))
            .collect()),
        Value::Null => Ok(Vec::new()),
        other => Err(format!("cannot iterate over a {}", other.type_name())),
    }
}

fn get_attr(value: Value, name: &str) -> Result<Value, String> {
    match value {
        Value::Map(mut map) => map
            .remove(name)
            .ok_or_else(|| format!("object has no attribute `{name}`")),
        Value::Null => Err(format!("cannot read `{name}` of null")),
        other => Err(format!(
            "cannot read attribute `{name}` of a {}",
            other.type_name()
        )),
    }
}

fn get_index(value: Value, key: &Value) -> Result<Value, String> {
    match value {
        Value::List(mut items) => {
            let n = key.as_number()?;
            let i = n as usize;
            if n < 0.0 || n.fract() != 0.0 || i >= items.len() {
                return Err(format!(
                    "the index is not a whole number from 0 to {} (the list has {} elements)",
                    items.len().saturating_sub(1),
                    items.len()
                ));
            }
            Ok(items.swap_remove(i))
        }
        Value::Map(mut map) => {
            let k = key.to_template_string()?;
            map.remove(&k)
                .ok_or_else(|| "the object has no element with this key".to_string())
        }
        other => Err(format!("cannot index a {}", other.type_name())),
    }
}

fn binary(op: BinaryOperator, lhs: Value, rhs: Value) -> Result<Value, String> {
    use BinaryOperator::*;
    // false && unknown is false, true || unknown is true: the unknown cannot change them.
    match (op, &lhs, &rhs) {
        (And, Value::Bool(false), _) | (And, _, Value::Bool(false)) => {
            return Ok(Value::Bool(false));
        }
        (Or, Value::Bool(true), _) | (Or, _, Value::Bool(true)) => return Ok(Value::Bool(true)),
        _ => {}
    }
    if let Value::Unknown(why) = &lhs {
        return Ok(Value::Unknown(why.clone()));
    }
    if let Value::Unknown(why) = &rhs {
        return Ok(Value::Unknown(why.clone()));
    }
    Ok(match op {
        Eq => Value::Bool(lhs == rhs),
        NotEq => Value::Bool(lhs != rhs),
        And => Value::Bool(lhs.as_bool()? && rhs.as_bool()?),
        Or => Value::Bool(lhs.as_bool()? || rhs.as_bool()?),
        Less => Value::Bool(lhs.as_number()? < rhs.as_number()?),
        LessEq => Value::Bool(lhs.as_number()? <= rhs.as_number()?),
        Greater => Value::Bool(lhs.as_number()? > rhs.as_number()?),
        GreaterEq => Value::Bool(lhs.as_number()? >= rhs.as_number()?),
        Plus => Value::Number(lhs.as_number()? + rhs.as_number()?),
        Minus => Value::Number(lhs.as_number()? - rhs.as_number()?),
        Mul => Value::Number(lhs.as_number()? * rhs.as_number()?),
        Div => Value::Number(lhs.as_number()? / rhs.as_number()?),
        Mod => Value::Number(lhs.as_number()? % rhs.as_number()?),
    })
}

impl Instance<'_> {
    /// A paid-for copy of a remembered value.
    fn copy(
        &self,
        value: &Value,
        span: Option<std::ops::Range<usize>>,
    ) -> Result<Value, EvalError> {
        self.budget()
            .copy(value)
            .map_err(|l| self.limit_error(span, l))
    }
}
