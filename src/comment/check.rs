//! The failed units' logs as the `cascade` check run shows them (GitHub's `output.text`,
//! Markdown): per unit a heading and the last lines of its log in a code block, within a
//! size limit shared fairly between the units, the most recent lines kept.
//!
//! A unit's log is what a pull request's code printed, so it is hostile: escape sequences
//! and control characters are removed, lines are cut at [`MAX_LINE_CHARS`], and each
//! block's fence is longer than any run of backticks in it, so no line can close it.
//! The lines arrive redacted and without the server's paths (`engine::failure_log`).

use crate::engine::failure_log::{LogTail, MAX_LOG_TAILS};
use crate::inert::{code, fence_for, hides_text};

/// The longest line shown, in characters; longer ones are cut with `…`.
pub const MAX_LINE_CHARS: usize = 1_000;

const INTRO: &str = "The last lines of each failed unit's log, most recent last. Secrets and the server's paths are hidden.\n\n";
const EARLIER: &str = "*Earlier lines are not shown.*\n\n";

/// One unit's block before its lines are chosen.
struct Block {
    heading: String,
    lines: Vec<String>,
    earlier: bool,
    /// The fence for all of `lines`: no shorter than the fence of any part of them.
    fence: String,
}

impl Block {
    /// Bytes the block takes besides its lines (counting the note on earlier lines).
    fn frame(&self) -> usize {
        self.heading.len() + EARLIER.len() + 2 * self.fence.len() + "text\n\n\n\n".len()
    }

    fn need(&self) -> usize {
        self.lines.iter().map(|l| l.len() + 1).sum()
    }
}

/// The Markdown for `logs`, the units that `what` (`failed to plan`, `failed to apply`),
/// at most `limit` bytes long. `failed` is how many units failed in all, so the units
/// whose logs are not shown are counted.
pub fn failure_logs_text(logs: &[LogTail], failed: usize, what: &str, limit: usize) -> String {
    let headed = logs
        .iter()
        .take(MAX_LOG_TAILS)
        .map(|tail| (format!("### {} {what}\n\n", code(&tail.unit)), tail));
    let rest_note = |shown: usize| match failed.saturating_sub(shown) {
        0 => String::new(),
        1 => "1 more unit failed; its log is not shown here.\n".to_string(),
        n => format!("{n} more units failed; their logs are not shown here.\n"),
    };
    blocks_text(INTRO, headed, rest_note, limit)
}

/// The output of workflow steps, each under its heading (cascade's own Markdown, with the
/// unit and step names made inert by the caller), fairly sharing `limit` bytes: the
/// check's text after the failure logs.
pub fn step_outputs_text<'a>(
    steps: impl Iterator<Item = (String, &'a LogTail)>,
    limit: usize,
) -> String {
    blocks_text(STEPS_INTRO, steps, |_| String::new(), limit)
}

const STEPS_INTRO: &str = "## Workflow steps\n\nThe output of each workflow step, most recent lines last. Secrets and the server's paths are hidden.\n\n";

fn blocks_text<'a>(
    intro: &str,
    headed: impl Iterator<Item = (String, &'a LogTail)>,
    rest_note: impl Fn(usize) -> String,
    limit: usize,
) -> String {
    let mut blocks: Vec<Block> = headed
        .map(|(heading, tail)| {
            let lines: Vec<String> = tail.lines.iter().map(|l| log_line(l)).collect();
            Block {
                heading,
                fence: fence_for(&lines.join("\n")),
                lines,
                earlier: tail.earlier,
            }
        })
        .collect();
    // Units whose frames alone do not fit are left out, last first.
    while !blocks.is_empty() {
        let fixed: usize = intro.len()
            + rest_note(blocks.len()).len()
            + blocks.iter().map(Block::frame).sum::<usize>();
        if fixed < limit {
            break;
        }
        blocks.pop();
    }
    let fixed: usize = intro.len()
        + rest_note(blocks.len()).len()
        + blocks.iter().map(Block::frame).sum::<usize>();
    if blocks.is_empty() || fixed >= limit {
        let note = rest_note(0);
        return if note.len() <= limit {
            note
        } else {
            String::new()
        };
    }
    let shares = fair_shares(
        &blocks.iter().map(Block::need).collect::<Vec<_>>(),
        limit - fixed,
    );
    let mut out = String::from(intro);
    for (block, share) in blocks.iter().zip(shares) {
        render_block(&mut out, block, share);
    }
    out.push_str(&rest_note(blocks.len()));
    debug_assert!(out.len() <= limit, "{} > {limit}", out.len());
    out
}

/// Splits `budget` between demands: an equal share each, and what a small demand leaves
/// over goes to the others (max-min fairness).
fn fair_shares(needs: &[usize], budget: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..needs.len()).collect();
    order.sort_by_key(|&i| needs[i]);
    let mut shares = vec![0; needs.len()];
    let mut left = budget;
    for (done, &i) in order.iter().enumerate() {
        let equal = left / (needs.len() - done);
        shares[i] = needs[i].min(equal);
        left -= shares[i];
    }
    shares
}

/// Appends `block` with as many of its most recent lines as `share` bytes hold.
fn render_block(out: &mut String, block: &Block, share: usize) {
    let mut kept = Vec::new();
    let mut used = 0;
    for line in block.lines.iter().rev() {
        if used + line.len() + 1 > share {
            break;
        }
        used += line.len() + 1;
        kept.push(line.clone());
    }
    if kept.is_empty()
        && let Some(last) = block.lines.last()
    {
        // Not even the last line fits whole: its start, cut.
        let room = share.saturating_sub(1 + '…'.len_utf8());
        if room > 0 {
            let mut end = room.min(last.len());
            while !last.is_char_boundary(end) {
                end -= 1;
            }
            kept.push(format!("{}…", &last[..end]));
        }
    }
    kept.reverse();
    out.push_str(&block.heading);
    if block.earlier || kept.len() < block.lines.len() {
        out.push_str(EARLIER);
    }
    let fence = fence_for(&kept.join("\n"));
    out.push_str(&fence);
    out.push_str("text\n");
    for line in &kept {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&fence);
    out.push_str("\n\n");
}

/// A log line as a code block may hold it: escape sequences (colours, cursor movement)
/// and control characters removed, as are the characters that hide or reorder text on
/// screen (bidirectional overrides, zero-width characters); tabs kept; cut at
/// [`MAX_LINE_CHARS`].
pub(super) fn log_line(line: &str) -> String {
    let plain = anstream::adapter::strip_str(line).to_string();
    let mut out = String::with_capacity(plain.len().min(MAX_LINE_CHARS * 4));
    let mut kept = 0;
    for c in plain.chars() {
        if c != '\t' && hides_text(c) {
            continue;
        }
        if kept == MAX_LINE_CHARS {
            out.push('…');
            break;
        }
        out.push(c);
        kept += 1;
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(unit: &str, lines: &[&str]) -> LogTail {
        LogTail {
            unit: unit.into(),
            lines: lines.iter().map(|l| l.to_string()).collect(),
            earlier: false,
        }
    }

    #[test]
    fn shares_are_fair_and_small_needs_leave_the_rest_to_others() {
        assert_eq!(fair_shares(&[10, 1000, 1000], 610), vec![10, 300, 300]);
        assert_eq!(fair_shares(&[5, 5], 100), vec![5, 5]);
        assert_eq!(fair_shares(&[], 100), Vec::<usize>::new());
    }

    #[test]
    fn escape_sequences_and_control_characters_go() {
        assert_eq!(
            log_line("\u{1b}[31mError:\u{1b}[0m bad\u{7}\r\u{202E}x\tz  "),
            "Error: badx\tz"
        );
        let long = "y".repeat(MAX_LINE_CHARS + 5);
        assert_eq!(log_line(&long).chars().count(), MAX_LINE_CHARS + 1);
    }

    #[test]
    fn the_most_recent_lines_are_kept_within_the_limit() {
        let lines: Vec<String> = (0..5000).map(|i| format!("line {i:05}")).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let text = failure_logs_text(
            &[tail("a", &refs), tail("b", &["only one"])],
            2,
            "failed to plan",
            4_000,
        );
        assert!(text.len() <= 4_000, "{}", text.len());
        assert!(text.contains("line 04999\n"), "{text}");
        assert!(!text.contains("line 00000"), "{text}");
        assert!(text.contains("only one"), "{text}");
        assert!(text.contains(EARLIER.trim()), "{text}");
    }

    #[test]
    fn more_units_than_fit_are_counted() {
        let tails: Vec<LogTail> = (0..30).map(|i| tail(&format!("u{i}"), &["boom"])).collect();
        let text = failure_logs_text(&tails, 31, "failed to plan", 65_535);
        assert!(text.contains("`u19`") && !text.contains("`u20`"), "{text}");
        assert!(text.contains("11 more units failed"), "{text}");
        let tiny = failure_logs_text(&tails, 31, "failed to plan", 300);
        assert!(tiny.len() <= 300, "{tiny}");
    }

    #[test]
    fn a_single_huge_line_is_cut_to_fit() {
        let text = failure_logs_text(&[tail("a", &[&"x".repeat(900)])], 1, "failed", 400);
        assert!(text.len() <= 400, "{}", text.len());
        assert!(text.contains("x…\n"), "{text}");
    }
}
