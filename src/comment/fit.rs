//! Keeping one plan or apply result within a number of comments.
//!
//! A body that needs more parts than allowed first loses rendered plans: the units' blocks
//! keep their summary line, but their diff is replaced by a line saying it is not shown and
//! how to see it, and a sentence above the blocks says how many were left out. The largest
//! rendered plan goes first (among equals, the later unit), because that frees the most room
//! while showing the most units; this repeats until the body fits. When even a body without
//! rendered plans needs too many parts (thousands of units in the tables), the parts past
//! the cap are dropped and the last part kept says so. Nothing is cut silently.
//!
//! Each round renders the template and splits the body again, so the count is exact whatever
//! a repo's template override shows; a first estimate from the rendered plans' sizes keeps a
//! huge plan from being rendered whole even once.

use super::view::PlanContext;
use super::{CommentError, CommentKind, chars, frame, frame_overhead, pieces};

/// Where a comment goes: the forge's limit per body, which comment, how many bodies at most.
pub(super) struct Layout {
    pub limit: usize,
    pub kind: CommentKind,
    /// `usize::MAX`: no cap (what `cascade plan` prints).
    pub max_comments: usize,
}

/// The bodies of one comment: `render` turns `context` into Markdown; `plan_of` gives the
/// plan whose rendered plans may be cut (the plan itself, or an apply result's new plan).
pub(super) fn fit<C>(
    context: &mut C,
    plan_of: fn(&mut C) -> Option<&mut PlanContext>,
    render: &dyn Fn(&C) -> Result<String, CommentError>,
    layout: &Layout,
) -> Result<Vec<String>, CommentError> {
    let capped = layout.max_comments != usize::MAX;
    let reserve = if capped {
        chars(&overflow_note(usize::MAX, usize::MAX)) + 2
    } else {
        0
    };
    let max = layout.max_comments.max(1);
    let order = plan_of(context).map(cut_order).unwrap_or_default();
    let mut cut = 0;
    if capped && let Some(plan) = plan_of(context) {
        // Rendered plans alone larger than every part together: cut those first, unrendered.
        let capacity = max.saturating_mul(layout.limit);
        let mut total: usize = plan
            .changed_units_mut()
            .iter()
            .map(|u| u.diff_chars())
            .sum();
        while total > capacity && cut < order.len() {
            total -= plan.changed_units_mut()[order[cut]].diff_chars();
            cut_one(plan, order[cut], max);
            cut += 1;
        }
    }
    let mut round = 0;
    loop {
        round += 1;
        let body = render(context)?;
        let parts = pieces(&body, layout.limit, layout.kind, reserve)?;
        if parts.len() <= max {
            return Ok(frame_all(layout.kind, parts));
        }
        let Some(plan) = plan_of(context).filter(|_| cut < order.len()) else {
            return Ok(frame_all(layout.kind, overflow(parts, max)));
        };
        // What the parts can hold, framed, with room for the overflow note.
        let per_part = layout
            .limit
            .saturating_sub(frame_overhead(layout.kind, max.max(2)) + reserve);
        let capacity = max.saturating_mul(per_part);
        // How much the body exceeds what the parts hold (the first cut also adds the
        // sentence above the blocks); from the second round on, plus a growing margin for
        // the room that packing whole blocks into parts loses.
        let sentence = if cut == 0 { CUT_SENTENCE_CHARS } else { 0 };
        let excess =
            (chars(&body) + sentence).saturating_sub(capacity) + (round - 1) * layout.limit / 8;
        let mut freed = 0;
        loop {
            let unit = &mut plan.changed_units_mut()[order[cut]];
            // The rendered plan and its fences go; one line saying so comes instead.
            freed += unit.diff_chars().saturating_sub(CUT_LINE_CHARS);
            cut_one(plan, order[cut], max);
            cut += 1;
            if cut == order.len() || freed >= excess {
                break;
            }
        }
    }
}

/// About what the line in a cut unit's block and the sentence above the blocks take.
const CUT_LINE_CHARS: usize = 110;
const CUT_SENTENCE_CHARS: usize = 180;

/// Indices of the units with a rendered plan, in the order they are cut: largest first, the
/// later unit first among equals.
fn cut_order(plan: &mut PlanContext) -> Vec<usize> {
    let units = plan.changed_units_mut();
    let mut order: Vec<(usize, usize)> = units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.diff_chars() > 0)
        .map(|(i, u)| (u.diff_chars(), i))
        .collect();
    order.sort_unstable_by(|a, b| b.cmp(a));
    order.into_iter().map(|(_, i)| i).collect()
}

fn cut_one(plan: &mut PlanContext, index: usize, max_comments: usize) {
    plan.changed_units_mut()[index].cut_diff();
    plan.diffs_cut += 1;
    let n = plan.diffs_cut;
    let (what, it) = if n == 1 {
        ("The plan of 1 unit is".to_string(), "it")
    } else {
        (format!("The plans of {n} units are"), "them")
    };
    plan.diffs_cut_text = format!(
        "{what} not shown below (the largest first): cascade posts at most {max_comments} \
         comments. Run `cascade plan --format markdown` locally to see {it}."
    );
}

/// The first `max` pieces; the last one says what was left out.
fn overflow(mut parts: Vec<String>, max: usize) -> Vec<String> {
    let total = parts.len();
    parts.truncate(max);
    if let Some(last) = parts.last_mut() {
        last.push_str("\n\n");
        last.push_str(&overflow_note(total - max, max));
    }
    parts
}

fn overflow_note(dropped: usize, max: usize) -> String {
    format!(
        "**Cut:** {dropped} more comments' worth of this is not shown: cascade posts at most \
         {max} comments. Run `cascade plan --format markdown` locally to see all of it."
    )
}

fn frame_all(kind: CommentKind, parts: Vec<String>) -> Vec<String> {
    let n = parts.len();
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| frame(kind, i + 1, n, part))
        .collect()
}
