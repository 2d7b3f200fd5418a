//! Comparing the two sides of a change into a [`Diff`] tree: what each value, element and
//! attribute does (create, delete, update, nothing) and how it should be drawn.
//!
//! The plan JSON carries no provider schema, so every value is read as terraform reads a
//! dynamically typed one (`terraform_data.input`, outputs): objects, arrays and primitives
//! as they appear in the JSON. `after_unknown`, `before_sensitive` and `after_sensitive`
//! mirror the value's shape; a `true` at some level marks everything below it.
//!
//! The tree borrows the plan's values; it never copies or formats them (that is `text.rs`).

use super::slice::{self, Budget};
use serde_json::{Map, Value};

static NULL: Value = Value::Null;

/// What a value, element or attribute does. A resource's own action comes from the plan;
/// inside it these four are all there is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    NoOp,
    Create,
    Delete,
    Update,
}

impl Act {
    /// The action of a collection that holds both `self` and `next`.
    fn and(self, next: Act) -> Act {
        match (self, next) {
            (current, Act::NoOp) => current,
            (current, next) if current == next => current,
            _ => Act::Update,
        }
    }
}

/// The computed change of one value.
pub(super) struct Diff<'a> {
    pub kind: Kind<'a>,
    pub action: Act,
    /// A `replace_paths` entry ends here: this change forces the resource's replacement.
    pub replace: bool,
}

pub(super) enum Kind<'a> {
    /// `null`, a bool, a number or a string (strings may be drawn as JSON or heredocs).
    Primitive { before: &'a Value, after: &'a Value },
    /// A JSON object; keys in byte order.
    Object(Vec<(&'a str, Diff<'a>)>),
    /// A JSON array; elements aligned before against after.
    List(Vec<Diff<'a>>),
    /// The new value is known only after apply; the old one, if any.
    Unknown(Option<Box<Diff<'a>>>),
    /// Marked sensitive on one side or both; only whether it changes may be shown.
    Sensitive {
        before: bool,
        after: bool,
        inner: Act,
    },
    /// The value changes type (a string becomes an object, say).
    TypeChange(Box<Diff<'a>>, Box<Diff<'a>>),
    /// A resource's top level: its attributes, keys in byte order.
    Block(Vec<(&'a str, Diff<'a>)>),
}

/// The two sides of one value and what the plan says about them. `*_explicit` tells a
/// key that is present with `null` from a key that is missing, as terraform does.
#[derive(Clone)]
pub(super) struct Change<'a> {
    pub before: &'a Value,
    pub after: &'a Value,
    pub before_explicit: bool,
    pub after_explicit: bool,
    pub unknown: &'a Value,
    pub before_sensitive: &'a Value,
    pub after_sensitive: &'a Value,
    /// The remaining steps of each `replace_paths` entry that leads here.
    pub replace: Vec<&'a [Value]>,
}

impl<'a> Change<'a> {
    /// A resource's or output's `change` object. A `forget` shows the object as it stays.
    pub fn of(change: &'a Map<String, Value>, forget: bool) -> Change<'a> {
        let field = |name: &str| change.get(name).unwrap_or(&NULL);
        let replace = match field("replace_paths") {
            Value::Array(paths) => paths
                .iter()
                .filter_map(|p| p.as_array().map(Vec::as_slice))
                .collect(),
            _ => Vec::new(),
        };
        let whole = Change {
            before: field("before"),
            after: field("after"),
            before_explicit: false,
            after_explicit: false,
            unknown: field("after_unknown"),
            before_sensitive: field("before_sensitive"),
            after_sensitive: field("after_sensitive"),
            replace,
        };
        if forget { whole.unchanged() } else { whole }
    }

    fn is_unknown(&self) -> bool {
        self.unknown == &Value::Bool(true)
    }

    fn is_before_sensitive(&self) -> bool {
        self.before_sensitive == &Value::Bool(true)
    }

    fn is_after_sensitive(&self) -> bool {
        self.after_sensitive == &Value::Bool(true)
    }

    fn forces_replacement(&self) -> bool {
        self.replace.iter().any(|path| path.is_empty())
    }

    /// The before side on both sides: nothing changes.
    fn unchanged(self) -> Change<'a> {
        Change {
            after: self.before,
            after_explicit: self.before_explicit,
            unknown: &NULL,
            after_sensitive: self.before_sensitive,
            ..self
        }
    }

    /// Only the before side, as if the value were removed.
    fn removed(&self) -> Change<'a> {
        Change {
            after: &NULL,
            after_explicit: false,
            unknown: &NULL,
            after_sensitive: &NULL,
            ..self.clone()
        }
    }

    /// Only the after side, as if the value were new.
    fn added(&self) -> Change<'a> {
        Change {
            before: &NULL,
            before_explicit: false,
            before_sensitive: &NULL,
            ..self.clone()
        }
    }

    fn key(&self, key: &str) -> Change<'a> {
        let get = |v: &'a Value| v.as_object().and_then(|m| m.get(key));
        let before = get(self.before);
        let after = get(self.after);
        Change {
            before: before.unwrap_or(&NULL),
            after: after.unwrap_or(&NULL),
            before_explicit: before.is_some(),
            after_explicit: after.is_some(),
            unknown: get(self.unknown).unwrap_or(&NULL),
            before_sensitive: get(self.before_sensitive).unwrap_or(&NULL),
            after_sensitive: get(self.after_sensitive).unwrap_or(&NULL),
            replace: self
                .replace
                .iter()
                .filter_map(|path| match path.split_first() {
                    Some((Value::String(step), rest)) if step == key => Some(rest),
                    _ => None,
                })
                .collect(),
        }
    }

    /// Element `b` of the before list against element `a` of the after list; an index past
    /// the end means that side has no element.
    fn index(&self, b: usize, a: usize) -> Change<'a> {
        let get = |v: &'a Value, i: usize| v.as_array().and_then(|l| l.get(i));
        let before = get(self.before, b);
        let after = get(self.after, a);
        let path_index = if before.is_some() { b } else { a };
        Change {
            before: before.unwrap_or(&NULL),
            after: after.unwrap_or(&NULL),
            before_explicit: before.is_some(),
            after_explicit: after.is_some(),
            unknown: get(self.unknown, a).unwrap_or(&NULL),
            before_sensitive: get(self.before_sensitive, b).unwrap_or(&NULL),
            after_sensitive: get(self.after_sensitive, a).unwrap_or(&NULL),
            replace: self
                .replace
                .iter()
                .filter_map(|path| match path.split_first() {
                    Some((step, rest)) if step_is_index(step, path_index) => Some(rest),
                    _ => None,
                })
                .collect(),
        }
    }

    /// Keys of every side and mark, sorted and deduplicated.
    fn keys(&self, with_marks: bool) -> Vec<&'a str> {
        let mut sides = vec![self.before, self.after, self.unknown];
        if with_marks {
            sides.extend([self.before_sensitive, self.after_sensitive]);
        }
        let mut keys: Vec<&'a str> = sides
            .into_iter()
            .filter_map(Value::as_object)
            .flat_map(|m| m.keys().map(String::as_str))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The action a collection starts from before its children are compared.
    fn collection_start(&self, is: fn(&Value) -> bool) -> Act {
        match (is(self.before), is(self.after)) {
            (true, false) => Act::Delete,
            (false, true) => Act::Create,
            _ => Act::NoOp,
        }
    }

    fn diff(&self, kind: Kind<'a>, action: Act) -> Diff<'a> {
        Diff {
            kind,
            action,
            replace: self.forces_replacement(),
        }
    }
}

fn step_is_index(step: &Value, index: usize) -> bool {
    match step {
        Value::Number(n) => n.as_u64() == Some(index as u64),
        Value::String(s) => s.parse::<f64>().ok() == Some(index as f64),
        _ => false,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum JsonType {
    Null,
    Bool,
    Number,
    String,
    Object,
    Array,
}

fn json_type(value: &Value) -> JsonType {
    match value {
        Value::Null => JsonType::Null,
        Value::Bool(_) => JsonType::Bool,
        Value::Number(_) => JsonType::Number,
        Value::String(_) => JsonType::String,
        Value::Object(_) => JsonType::Object,
        Value::Array(_) => JsonType::Array,
    }
}

/// The change of a resource's attributes: every key of either side or of `after_unknown`;
/// attributes null on both sides and unchanged are left out, as terraform leaves out
/// attributes a configuration does not set.
pub(super) fn resource<'a>(change: &Change<'a>, budget: &mut Budget) -> Diff<'a> {
    let mut action = change.collection_start(|v| !v.is_null());
    let mut attributes = Vec::new();
    for key in change.keys(false) {
        let mut child = change.key(key);
        // Attributes of a resource never count as explicitly present or absent.
        child.before_explicit = false;
        child.after_explicit = false;
        let diff = value(&child, budget);
        if diff.action == Act::NoOp && child.before.is_null() && child.after.is_null() {
            continue;
        }
        action = action.and(diff.action);
        attributes.push((key, diff));
    }
    change.diff(Kind::Block(attributes), action)
}

/// The change of one value of any type.
pub(super) fn value<'a>(change: &Change<'a>, budget: &mut Budget) -> Diff<'a> {
    let (before_sensitive, after_sensitive) =
        (change.is_before_sensitive(), change.is_after_sensitive());
    if before_sensitive || after_sensitive {
        let inner = value(
            &Change {
                before_sensitive: &NULL,
                after_sensitive: &NULL,
                ..change.clone()
            },
            budget,
        );
        let both_missing = change.before.is_null()
            && !change.before_explicit
            && change.after.is_null()
            && !change.after_explicit;
        let action =
            if inner.action == Act::NoOp && before_sensitive != after_sensitive && !both_missing {
                Act::Update
            } else {
                inner.action
            };
        let kind = Kind::Sensitive {
            before: before_sensitive,
            after: after_sensitive,
            inner: inner.action,
        };
        return change.diff(kind, action);
    }

    if change.is_unknown() {
        if change.before.is_null() {
            return change.diff(Kind::Unknown(None), Act::Create);
        }
        let before = value(&change.removed(), budget);
        return change.diff(Kind::Unknown(Some(Box::new(before))), Act::Update);
    }

    let (before_type, after_type) = (json_type(change.before), json_type(change.after));
    let deleted = after_type == JsonType::Null && !change.after_explicit;
    let created = before_type == JsonType::Null && !change.before_explicit;
    if before_type == after_type || created || deleted {
        let target = if before_type == JsonType::Null {
            after_type
        } else {
            before_type
        };
        return of_type(change, target, budget);
    }
    // The replacement note goes after both sides, not on each.
    let before = Diff {
        replace: false,
        ..of_type(&change.removed(), before_type, budget)
    };
    let after = Diff {
        replace: false,
        ..of_type(&change.added(), after_type, budget)
    };
    change.diff(
        Kind::TypeChange(Box::new(before), Box::new(after)),
        Act::Update,
    )
}

fn of_type<'a>(change: &Change<'a>, target: JsonType, budget: &mut Budget) -> Diff<'a> {
    match target {
        JsonType::Object => object(change, budget),
        JsonType::Array => list(change, budget),
        _ => primitive(change),
    }
}

fn primitive<'a>(change: &Change<'a>) -> Diff<'a> {
    let before_missing = change.before.is_null() && !change.before_explicit;
    let after_missing = change.after.is_null() && !change.after_explicit;
    let action = match (before_missing, after_missing) {
        (true, false) => Act::Create,
        (false, true) => Act::Delete,
        _ if change.before == change.after => Act::NoOp,
        _ => Act::Update,
    };
    change.diff(
        Kind::Primitive {
            before: change.before,
            after: change.after,
        },
        action,
    )
}

fn object<'a>(change: &Change<'a>, budget: &mut Budget) -> Diff<'a> {
    let mut action = change.collection_start(Value::is_object);
    let mut attributes = Vec::new();
    for key in change.keys(true) {
        let diff = value(&change.key(key), budget);
        action = action.and(diff.action);
        attributes.push((key, diff));
    }
    change.diff(Kind::Object(attributes), action)
}

fn list<'a>(change: &Change<'a>, budget: &mut Budget) -> Diff<'a> {
    let empty = Vec::new();
    let before = change.before.as_array().unwrap_or(&empty);
    let after = change.after.as_array().unwrap_or(&empty);
    let mut action = change.collection_start(Value::is_array);
    let mut elements = Vec::new();
    for (b, a) in slice::align_values(before, after, budget) {
        let diff = value(&change.index(b, a), budget);
        action = action.and(diff.action);
        elements.push(diff);
    }
    change.diff(Kind::List(elements), action)
}
