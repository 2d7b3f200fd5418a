//! The accounting that keeps one unit's evaluation bounded: steps taken,
//! nesting depth, and the discovery deadline.
//!
//! Owns: counting (every expression evaluated and every value copied pays for
//! itself), the first [`Limit`] a unit runs into and where, and copying values
//! at a price. Once a limit is hit the budget stays *tripped*: every later step
//! fails at once, so evaluation unwinds quickly and the unit ends unresolved
//! (never a fallback that `try()` or `can()` could turn into a wrong edge).
//! Must never: be shared between units (one budget per unit; the files a unit
//! reads with `read_terragrunt_config` share the unit's), or be consulted on a
//! different thread than the unit's.

use super::limits::{
    DEADLINE_CHECK_STEPS, Limit, MAX_COLLECTION_LEN, MAX_EVAL_DEPTH, MAX_STEPS_PER_UNIT,
    MAX_STRING_BYTES, MAX_VALUE_DEPTH, STRING_BYTES_PER_STEP,
};
use super::value::Value;
use std::cell::{Cell, RefCell};
use std::time::Instant;

/// Where a unit first ran into a limit, for the problem it reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tripped {
    pub limit: Limit,
    /// Repo-relative file and line of the expression that ran into it, when known.
    pub at: Option<(String, Option<u32>)>,
}

/// One unit's evaluation budget.
pub struct Budget {
    steps: Cell<u64>,
    depth: Cell<u32>,
    deadline: Option<Instant>,
    tripped: RefCell<Option<Tripped>>,
}

/// Leaves one nesting level when dropped.
pub struct DepthGuard<'b> {
    budget: &'b Budget,
}

impl Drop for DepthGuard<'_> {
    fn drop(&mut self) {
        self.budget.depth.set(self.budget.depth.get() - 1);
    }
}

impl Budget {
    pub fn new(deadline: Option<Instant>) -> Budget {
        Budget {
            steps: Cell::new(0),
            depth: Cell::new(0),
            deadline,
            tripped: RefCell::new(None),
        }
    }

    /// The first limit this unit ran into, if any.
    pub fn tripped(&self) -> Option<Tripped> {
        self.tripped.borrow().clone()
    }

    /// Records `limit` (the first one wins) and returns it, for `?`.
    pub fn trip(&self, limit: Limit) -> Limit {
        let mut tripped = self.tripped.borrow_mut();
        tripped.get_or_insert(Tripped { limit, at: None }).limit
    }

    /// Locates the first limit, once: the first expression that reports it.
    pub fn locate(&self, file: &str, line: Option<u32>) {
        if let Some(t) = self.tripped.borrow_mut().as_mut()
            && t.at.is_none()
        {
            t.at = Some((file.to_string(), line));
        }
    }

    /// Fails when a limit was already hit, or the deadline has passed.
    pub fn check(&self) -> Result<(), Limit> {
        if let Some(t) = self.tripped.borrow().as_ref() {
            return Err(t.limit);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(self.trip(Limit::Deadline));
        }
        Ok(())
    }

    /// Pays for `steps` steps; checks the deadline every [`DEADLINE_CHECK_STEPS`].
    pub fn charge(&self, steps: u64) -> Result<(), Limit> {
        if let Some(t) = self.tripped.borrow().as_ref() {
            return Err(t.limit);
        }
        let before = self.steps.get();
        let after = before.saturating_add(steps);
        self.steps.set(after);
        if after > MAX_STEPS_PER_UNIT {
            return Err(self.trip(Limit::Steps));
        }
        if before / DEADLINE_CHECK_STEPS != after / DEADLINE_CHECK_STEPS {
            self.check()?;
        }
        Ok(())
    }

    /// Enters one nesting level (and pays one step); the guard leaves it.
    pub fn enter(&self) -> Result<DepthGuard<'_>, Limit> {
        self.charge(1)?;
        let depth = self.depth.get() + 1;
        if depth > MAX_EVAL_DEPTH {
            return Err(self.trip(Limit::Depth));
        }
        self.depth.set(depth);
        Ok(DepthGuard { budget: self })
    }

    /// Fails when a string of `len` bytes would exceed [`MAX_STRING_BYTES`].
    pub fn string_len(&self, len: usize) -> Result<(), Limit> {
        if len > MAX_STRING_BYTES {
            return Err(self.trip(Limit::StringBytes));
        }
        Ok(())
    }

    /// Fails when a collection of `len` elements would exceed [`MAX_COLLECTION_LEN`].
    pub fn collection_len(&self, len: usize) -> Result<(), Limit> {
        if len > MAX_COLLECTION_LEN {
            return Err(self.trip(Limit::CollectionLen));
        }
        Ok(())
    }

    /// Checks the sizes of a value just produced (top level only: what is
    /// inside was checked when it was made).
    pub fn produced(&self, value: &Value) -> Result<(), Limit> {
        match value {
            Value::String(s) => self.string_len(s.len()),
            Value::List(items) => self.collection_len(items.len()),
            Value::Map(map) => self.collection_len(map.len()),
            _ => Ok(()),
        }
    }

    /// Copies `value`, paying one step per node and per
    /// [`STRING_BYTES_PER_STEP`] bytes; stops (without allocating further)
    /// when the budget runs out.
    pub fn copy(&self, value: &Value) -> Result<Value, Limit> {
        Ok(match value {
            Value::List(items) => {
                self.charge(1)?;
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(self.copy(item)?);
                }
                Value::List(out)
            }
            Value::Map(map) => {
                self.charge(1)?;
                let mut out = std::collections::BTreeMap::new();
                for (k, v) in map {
                    self.charge((k.len() / STRING_BYTES_PER_STEP) as u64)?;
                    out.insert(k.clone(), self.copy(v)?);
                }
                Value::Map(out)
            }
            Value::String(s) => {
                self.charge(1 + (s.len() / STRING_BYTES_PER_STEP) as u64)?;
                Value::String(s.clone())
            }
            other => {
                self.charge(1)?;
                other.clone()
            }
        })
    }

    /// Fails when `value` nests deeper than [`MAX_VALUE_DEPTH`]; looks no deeper than that.
    pub fn value_depth(&self, value: &Value) -> Result<(), Limit> {
        if nests_deeper(value, MAX_VALUE_DEPTH) {
            return Err(self.trip(Limit::ValueDepth));
        }
        Ok(())
    }
}

/// True when `value` has more than `levels` levels of lists and objects.
fn nests_deeper(value: &Value, levels: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::List(items) => Box::new(items.iter()),
        Value::Map(map) => Box::new(map.values()),
        _ => return false,
    };
    if levels == 0 {
        return true;
    }
    children
        .into_iter()
        .any(|child| nests_deeper(child, levels - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> Value {
        let mut v = Value::Null;
        for _ in 0..levels {
            v = Value::List(vec![v]);
        }
        v
    }

    #[test]
    fn a_tripped_budget_stays_tripped() {
        let b = Budget::new(None);
        assert!(b.charge(MAX_STEPS_PER_UNIT).is_ok());
        assert_eq!(b.charge(1), Err(Limit::Steps));
        assert_eq!(b.enter().err(), Some(Limit::Steps));
        assert_eq!(b.tripped().unwrap().limit, Limit::Steps);
    }

    #[test]
    fn depth_is_counted_and_released() {
        let b = Budget::new(None);
        {
            let _guards: Vec<_> = (0..MAX_EVAL_DEPTH).map(|_| b.enter().unwrap()).collect();
            assert_eq!(b.enter().err(), Some(Limit::Depth));
        }
        assert_eq!(b.depth.get(), 0);
    }

    #[test]
    fn a_past_deadline_stops_the_next_check() {
        let b = Budget::new(Some(Instant::now()));
        assert_eq!(b.check(), Err(Limit::Deadline));
    }

    #[test]
    fn copies_pay_for_their_size() {
        let b = Budget::new(None);
        let big = Value::String("x".repeat(64 * 100));
        b.copy(&big).unwrap();
        assert_eq!(b.steps.get(), 101);
        let list = Value::List(vec![Value::Null; 10]);
        b.copy(&list).unwrap();
        assert_eq!(b.steps.get(), 101 + 11);
    }

    #[test]
    fn value_depth_looks_only_as_deep_as_the_limit() {
        let b = Budget::new(None);
        assert!(b.value_depth(&nested(MAX_VALUE_DEPTH)).is_ok());
        assert_eq!(
            b.value_depth(&nested(MAX_VALUE_DEPTH + 1)),
            Err(Limit::ValueDepth)
        );
    }
}
