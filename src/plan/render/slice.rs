//! Lining up two lists (array elements, or the lines of a string) so that a change shows as
//! the elements added, removed and kept, the way terraform lines them up.
//!
//! Terraform takes a longest common subsequence with a quadratic table, then walks both
//! lists: elements before the next common one are removed (an object paired with an object
//! opposite it is shown as updated instead), then elements added, then the common one kept.
//! A list of the same length whose elements all appear on the other side is compared index
//! by index unless it is a reordering (every element before appears after). cascade does the same while the table is small; a pull request can make lists
//! of any length, so past a size (and past a time budget for the whole unit) the common
//! subsequence comes from Myers' algorithm with a deadline (`similar`), which is near linear
//! for similar lists and gives up gracefully when time runs out. Either way the walk is the
//! same and every element is shown once.

use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{Duration, Instant};

/// The largest table one comparison may use (cells of 4 bytes: 16 MiB).
const MAX_TABLE_CELLS: u64 = 1 << 22;

/// How much quadratic work and time one unit's rendering may spend lining up lists.
pub(super) struct Budget {
    cells: u64,
    deadline: Instant,
}

impl Budget {
    /// A budget of `cells` table cells in all, and `time` from now.
    pub fn new(cells: u64, time: Duration) -> Budget {
        Budget {
            cells,
            deadline: Instant::now() + time,
        }
    }

    /// Takes `cells` from the budget if the table is small enough and time is left.
    fn take_table(&mut self, cells: u64) -> bool {
        if cells > MAX_TABLE_CELLS || cells > self.cells || Instant::now() >= self.deadline {
            return false;
        }
        self.cells -= cells;
        true
    }
}

/// Pairs of (before index, after index) to compare, in display order. An index equal to the
/// length of its list means "no element on this side".
pub(super) type Pairs = Vec<(usize, usize)>;

/// Lines up JSON array elements; an object facing an object is paired rather than shown as
/// a removal and an addition.
pub(super) fn align_values(before: &[Value], after: &[Value], budget: &mut Budget) -> Pairs {
    let mut ids = Interner::default();
    let b: Vec<u32> = before.iter().map(|v| ids.value(v)).collect();
    let a: Vec<u32> = after.iter().map(|v| ids.value(v)).collect();
    walk(&b, &a, budget, |side, i| match side {
        Side::Before => before[i].is_object(),
        Side::After => after[i].is_object(),
    })
}

/// Lines up the lines of a string.
pub(super) fn align_lines(before: &[&str], after: &[&str], budget: &mut Budget) -> Pairs {
    fn id<'s>(ids: &mut HashMap<&'s str, u32>, line: &'s str) -> u32 {
        let next = ids.len() as u32;
        *ids.entry(line).or_insert(next)
    }
    let mut ids = HashMap::new();
    let b: Vec<u32> = before.iter().map(|l| id(&mut ids, l)).collect();
    let a: Vec<u32> = after.iter().map(|l| id(&mut ids, l)).collect();
    walk(&b, &a, budget, |_, _| false)
}

#[derive(Clone, Copy)]
enum Side {
    Before,
    After,
}

fn walk(
    b: &[u32],
    a: &[u32],
    budget: &mut Budget,
    is_object: impl Fn(Side, usize) -> bool,
) -> Pairs {
    let (nb, na) = (b.len(), a.len());
    if nb == na && !is_reorder(b, a) {
        return (0..nb).map(|i| (i, i)).collect();
    }
    let common = common_subsequence(b, a, budget);
    let mut pairs = Vec::with_capacity(nb.max(na));
    let (mut bi, mut ai, mut ci) = (0, 0, 0);
    while bi < nb || ai < na || ci < common.len() {
        let next = common.get(ci).copied();
        while bi < nb && Some(b[bi]) != next {
            if is_object(Side::Before, bi)
                && ai < na
                && is_object(Side::After, ai)
                && Some(a[ai]) != next
            {
                pairs.push((bi, ai));
                ai += 1;
            } else {
                pairs.push((bi, na));
            }
            bi += 1;
        }
        while ai < na && Some(a[ai]) != next {
            pairs.push((nb, ai));
            ai += 1;
        }
        if next.is_some() {
            pairs.push((bi, ai));
            bi += 1;
            ai += 1;
            ci += 1;
        }
    }
    pairs
}

/// Every element before has an equal one after: with the same length, a reordering, which
/// is lined up rather than compared index by index.
fn is_reorder(b: &[u32], a: &[u32]) -> bool {
    let after: HashSet<u32> = a.iter().copied().collect();
    b.iter().all(|id| after.contains(id))
}

/// A common subsequence of `b` and `a`: the longest, as terraform picks it, while the table
/// fits the budget; otherwise Myers' (still a common subsequence, maybe not the longest).
fn common_subsequence(b: &[u32], a: &[u32], budget: &mut Budget) -> Vec<u32> {
    if b.is_empty() || a.is_empty() {
        return Vec::new();
    }
    if budget.take_table(b.len() as u64 * a.len() as u64) {
        return longest_common(b, a);
    }
    similar::capture_diff_slices_deadline(similar::Algorithm::Myers, b, a, Some(budget.deadline))
        .into_iter()
        .filter_map(|op| match op {
            similar::DiffOp::Equal { old_index, len, .. } => Some(&b[old_index..old_index + len]),
            _ => None,
        })
        .flatten()
        .copied()
        .collect()
}

/// The longest common subsequence by dynamic programming. Ties are broken as terraform
/// breaks them (back-tracking prefers to step back in `a`), so equal-length alternatives
/// come out the same.
fn longest_common(b: &[u32], a: &[u32]) -> Vec<u32> {
    let w = b.len();
    let mut table = vec![0u32; w * a.len()];
    let at = |table: &[u32], x: usize, y: usize| table[w * y + x];
    for y in 0..a.len() {
        for x in 0..w {
            let cell = if b[x] == a[y] {
                if x == 0 || y == 0 {
                    1
                } else {
                    at(&table, x - 1, y - 1) + 1
                }
            } else {
                let left = if x > 0 { at(&table, x - 1, y) } else { 0 };
                let up = if y > 0 { at(&table, x, y - 1) } else { 0 };
                left.max(up)
            };
            table[w * y + x] = cell;
        }
    }
    let mut common = Vec::with_capacity(table[table.len() - 1] as usize);
    let (mut x, mut y) = (w as isize - 1, a.len() as isize - 1);
    while x >= 0 && y >= 0 {
        let (ux, uy) = (x as usize, y as usize);
        if b[ux] == a[uy] {
            common.push(b[ux]);
            x -= 1;
            y -= 1;
        } else {
            let left = if ux > 0 { at(&table, ux - 1, uy) } else { 0 };
            let up = if uy > 0 { at(&table, ux, uy - 1) } else { 0 };
            if left > up {
                x -= 1;
            } else {
                y -= 1;
            }
        }
    }
    common.reverse();
    common
}

/// Gives equal JSON values equal small ids.
#[derive(Default)]
struct Interner<'a> {
    by_hash: HashMap<u64, Vec<(&'a Value, u32)>>,
    next: u32,
}

impl<'a> Interner<'a> {
    fn value(&mut self, value: &'a Value) -> u32 {
        let mut hasher = DefaultHasher::new();
        hash_value(value, &mut hasher);
        let bucket = self.by_hash.entry(hasher.finish()).or_default();
        if let Some((_, id)) = bucket.iter().find(|(v, _)| *v == value) {
            return *id;
        }
        let id = self.next;
        self.next += 1;
        bucket.push((value, id));
        id
    }
}

/// A hash consistent with `Value`'s equality (objects iterate in key order).
fn hash_value(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => {
            2u8.hash(h);
            if let Some(u) = n.as_u64() {
                (0u8, u).hash(h);
            } else if let Some(i) = n.as_i64() {
                (1u8, i).hash(h);
            } else {
                (2u8, n.as_f64().map(f64::to_bits)).hash(h);
            }
        }
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            items.iter().for_each(|v| hash_value(v, h));
        }
        Value::Object(map) => {
            (5u8, map.len()).hash(h);
            for (k, v) in map {
                k.hash(h);
                hash_value(v, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn budget() -> Budget {
        Budget::new(u64::MAX, Duration::from_secs(60))
    }

    fn lines(before: &str, after: &str, budget: &mut Budget) -> String {
        let b: Vec<&str> = before.split(' ').collect();
        let a: Vec<&str> = after.split(' ').collect();
        align_lines(&b, &a, budget)
            .into_iter()
            .map(|(i, j)| match (b.get(i), a.get(j)) {
                (Some(x), Some(y)) if x == y => format!(" {x}"),
                (Some(x), Some(y)) => format!(" {x}>{y}"),
                (Some(x), None) => format!(" -{x}"),
                (None, Some(y)) => format!(" +{y}"),
                (None, None) => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn removals_come_before_additions() {
        assert_eq!(lines("a b c d", "a x c", &mut budget()), " a -b +x c -d");
        assert_eq!(lines("a b", "a b c", &mut budget()), " a b +c");
        assert_eq!(lines("a b c", "c", &mut budget()), " -a -b c");
    }

    #[test]
    fn same_length_compares_index_by_index_unless_reordered() {
        assert_eq!(lines("a b c", "a x c", &mut budget()), " a b>x c");
        assert_eq!(lines("a b c", "c a b", &mut budget()), " +c a b -c");
    }

    #[test]
    fn objects_facing_objects_are_paired() {
        let before = [json!({"a": 1}), json!("k"), json!({"b": 1})];
        let after = [json!({"a": 2}), json!("k"), json!({"b": 2}), json!("new")];
        let pairs = align_values(&before, &after, &mut budget());
        assert_eq!(pairs, [(0, 0), (1, 1), (2, 2), (3, 3)]);
        let before = [json!("x"), json!({"a": 1})];
        let after = [json!({"a": 2})];
        assert_eq!(
            align_values(&before, &after, &mut budget()),
            [(0, 1), (1, 0)]
        );
    }

    #[test]
    fn a_spent_budget_still_aligns_every_element() {
        let before: Vec<String> = (0..3000).map(|i| format!("l{i}")).collect();
        let mut after = before.clone();
        after[1500] = "changed".into();
        after.insert(10, "inserted".into());
        let b: Vec<&str> = before.iter().map(String::as_str).collect();
        let a: Vec<&str> = after.iter().map(String::as_str).collect();
        let mut spent = Budget::new(0, Duration::from_secs(60));
        let fast = align_lines(&b, &a, &mut spent);
        let exact = align_lines(&b, &a, &mut budget());
        for pairs in [&fast, &exact] {
            let kept = pairs
                .iter()
                .filter(|(i, j)| b.get(*i).is_some() && b.get(*i) == a.get(*j));
            assert_eq!(kept.count(), 2999);
            assert_eq!(pairs.len(), 3002);
        }
        let mut late = Budget::new(u64::MAX, Duration::ZERO);
        let coarse = align_lines(&b, &a, &mut late);
        let shown_before = coarse.iter().filter(|(i, _)| *i < b.len()).count();
        let shown_after = coarse.iter().filter(|(_, j)| *j < a.len()).count();
        assert_eq!((shown_before, shown_after), (b.len(), a.len()));
    }
}
