//! Edge cases of the splitter, on small hand-written Markdown.

use super::*;

fn len(s: &str) -> usize {
    s.chars().count()
}

fn details(name: &str, lines: usize) -> String {
    let body: Vec<String> = (0..lines)
        .map(|i| format!("+   create  {name}.r{i}"))
        .collect();
    format!(
        "<details><summary>{name}</summary>\n\n```diff\n{}\n```\n\n</details>",
        body.join("\n")
    )
}

#[test]
fn a_document_that_fits_is_one_piece() {
    let md = "# Title\n\nSome text.\n\n```\ncode\n```";
    assert_eq!(split(md, 1000).unwrap(), [md]);
}

#[test]
fn blank_lines_inside_fences_and_details_do_not_end_a_block() {
    let md = "a\n\n```\nx\n\ny\n```\n\n<details><summary>s</summary>\n\nbody\n\n</details>\n\nb";
    let texts: Vec<String> = blocks(md).iter().map(Block::text).collect();
    assert_eq!(
        texts,
        [
            "a",
            "```\nx\n\ny\n```",
            "<details><summary>s</summary>\n\nbody\n\n</details>",
            "b"
        ]
    );
}

#[test]
fn parts_are_cut_between_blocks_and_each_fits() {
    let md = [details("a", 5), details("b", 5), details("c", 5)].join("\n\n");
    let one = len(&details("a", 5));
    let parts = split(&md, one * 2 + 2).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0], [details("a", 5), details("b", 5)].join("\n\n"));
    assert_eq!(parts[1], details("c", 5));
}

#[test]
fn a_heading_moves_with_the_block_after_it() {
    let md = format!("intro\n\n## Heading\n\n{}", details("a", 5));
    let budget = len(&details("a", 5)) + len("## Heading") + 2;
    let parts = split(&md, budget).unwrap();
    assert_eq!(
        parts,
        [
            "intro".to_string(),
            format!("## Heading\n\n{}", details("a", 5))
        ]
    );
}

#[test]
fn an_oversized_details_block_is_truncated_inside_its_fence_and_closed() {
    let md = details("big", 100);
    let parts = split(&md, 300).unwrap();
    assert_eq!(parts.len(), 1);
    let part = &parts[0];
    assert!(len(part) <= 300, "{} chars", len(part));
    assert!(is_balanced(part), "{part}");
    let kept = part.lines().filter(|l| l.starts_with('+')).count();
    assert!(
        part.ends_with(&format!(
            "\n… {} more lines (see the run log)\n```\n</details>",
            100 - kept
        )),
        "{part}"
    );
    assert!(part.starts_with("<details><summary>big</summary>\n\n```diff\n+   create  big.r0\n"));
}

#[test]
fn truncation_inside_a_details_block_but_outside_a_fence_closes_the_details() {
    let items: Vec<String> = (0..50).map(|i| format!("- item {i}")).collect();
    let md = format!(
        "<details><summary>list</summary>\n\n{}\n\n</details>",
        items.join("\n")
    );
    let part = &split(&md, 200).unwrap()[0];
    assert!(len(part) <= 200);
    assert!(is_balanced(part), "{part}");
    assert!(part.ends_with("(see the run log)\n</details>"), "{part}");
}

#[test]
fn nested_details_are_all_closed() {
    let md = format!(
        "<details><summary>outer</summary>\n\n{}\n\n</details>",
        details("inner", 60)
    );
    let part = &split(&md, 400).unwrap()[0];
    assert!(len(part) <= 400);
    assert!(is_balanced(part), "{part}");
    assert!(part.ends_with("```\n</details>\n</details>"), "{part}");
}

#[test]
fn a_long_table_is_cut_between_rows_with_its_header_repeated() {
    let mut lines = vec!["| Unit | Add |".to_string(), "|:-----|----:|".to_string()];
    lines.extend((0..40).map(|i| format!("| `u{i:02}` | {i} |")));
    let md = lines.join("\n");
    let parts = split(&md, 120).unwrap();
    assert!(parts.len() > 1);
    let mut rows = Vec::new();
    for part in &parts {
        assert!(len(part) <= 120, "{part}");
        assert!(
            part.starts_with("| Unit | Add |\n|:-----|----:|\n"),
            "{part}"
        );
        rows.extend(part.lines().skip(2).map(str::to_string));
    }
    assert_eq!(rows, lines[2..]);
}

#[test]
fn a_long_list_is_cut_between_items() {
    let md: Vec<String> = (0..30).map(|i| format!("- item number {i}")).collect();
    let parts = split(&md.join("\n"), 100).unwrap();
    let items: Vec<&str> = parts.iter().flat_map(|p| p.lines()).collect();
    assert_eq!(items, md);
    assert!(parts.iter().all(|p| len(p) <= 100));
}

#[test]
fn a_single_line_longer_than_the_budget_is_cut_with_an_ellipsis() {
    let md = "x".repeat(500);
    let parts = split(&md, 100).unwrap();
    assert_eq!(parts.len(), 1);
    assert_eq!(len(&parts[0]), 100);
    assert!(parts[0].ends_with('…'));
}

#[test]
fn a_structural_line_longer_than_the_budget_is_unsplittable() {
    let md = format!(
        "<details><summary>{}</summary>\n\nx\n\n</details>",
        "y".repeat(300)
    );
    assert!(split(&md, 100).is_err());
}

#[test]
fn fences_follow_commonmark_closing_rules() {
    // A shorter run, a different character, or trailing text does not close the fence.
    let md = "````\n```\n~~~~\n```` not a closer\n````";
    assert!(is_balanced(md));
    assert!(!is_balanced("````\n```"));
    // Backticks in a backtick fence's info string make it inline code, not a fence.
    assert!(is_balanced("```not a fence```"));
    // `<details>` inside a fence is text.
    assert!(is_balanced("```\n<details>\n```"));
    assert!(!is_balanced("<details>\n```\n</details>\n```"));
    assert!(is_balanced("~~~\n```\n~~~"));
}

#[test]
fn details_tags_are_counted_case_insensitively_and_only_as_tags() {
    assert!(!is_balanced("<DETAILS open>"));
    assert!(is_balanced("<DETAILS open>\n</Details>"));
    assert!(is_balanced("<detailsfoo>"));
    assert!(is_balanced("<details><summary>a</summary>b</details>"));
}

#[test]
fn a_fence_in_a_truncated_block_uses_the_opening_fence_to_close() {
    let lines: Vec<String> = (0..80).map(|i| format!("line {i}")).collect();
    let md = format!(
        "<details><summary>s</summary>\n\n~~~~text\n{}\n~~~~\n\n</details>",
        lines.join("\n")
    );
    let part = &split(&md, 250).unwrap()[0];
    assert!(
        part.ends_with("(see the run log)\n~~~~\n</details>"),
        "{part}"
    );
}

#[test]
fn tidy_collapses_blank_lines_outside_fences_only() {
    assert_eq!(
        tidy("\n\na\n\n\n\nb\n```\n\n\n```\n\n"),
        "a\n\nb\n```\n\n\n```"
    );
}

#[test]
fn a_heading_is_not_glued_to_a_block_it_cannot_share_a_part_with() {
    let big = "y".repeat(95);
    let md = format!("intro\n\n## H\n\n{big}");
    let parts = split(&md, 100).unwrap();
    assert_eq!(parts, ["intro\n\n## H".to_string(), big]);
}

#[test]
fn a_truncated_block_leaves_room_for_a_short_tail() {
    let md = format!("{}\n\n---\nfooter", details("big", 200));
    let parts = split(&md, 1000).unwrap();
    assert_eq!(parts.len(), 1, "{parts:?}");
    assert!(len(&parts[0]) <= 1000);
    assert!(parts[0].ends_with("</details>\n\n---\nfooter"));
}
