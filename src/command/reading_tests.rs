//! Where a command counts in a comment's Markdown: line starts, code, quotes, HTML and the
//! places cascade hides more than CommonMark. One comment in, what `parse_comment` reads
//! out (`super::tests::show`). The commands' own arguments are in `tests.rs`.

use super::tests::show;

// Where a command counts.

#[test]
fn empty_comment() {
    insta::assert_snapshot!(show(""), @"");
}

#[test]
fn only_whitespace() {
    insta::assert_snapshot!(show("  \n\t\n\r\n   "), @"");
}

#[test]
fn text_without_commands() {
    insta::assert_snapshot!(show("LGTM, thanks!\nShip it."), @"");
}

#[test]
fn plan_alone() {
    insta::assert_snapshot!(show("/plan"), @"/plan");
}

#[test]
fn command_after_text_without_final_newline() {
    insta::assert_snapshot!(show("Looks good.\n/apply 3f9a2c1b7d4e"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn command_before_text() {
    insta::assert_snapshot!(show("/plan\nre-planning after the provider bump"), @"/plan");
}

#[test]
fn crlf_line_endings() {
    insta::assert_snapshot!(show("Thanks\r\n/plan live/dev/vpc\r\n/apply 3f9a2c1b7d4e\r\n"), @r#"
        /plan live/dev/vpc
        /apply 3f9a2c1b7d4e
    "#);
}

#[test]
fn up_to_three_spaces_of_indentation() {
    insta::assert_snapshot!(show(" /unlock\n  /help\n   /plan"), @r#"
        /unlock
        /help
        /plan
    "#);
}

#[test]
fn four_spaces_is_indented_code() {
    insta::assert_snapshot!(show("Run this:\n\n    /apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn tab_is_indented_code() {
    insta::assert_snapshot!(show("\t/plan"), @"");
}

#[test]
fn indented_paragraph_continuation_does_not_count() {
    insta::assert_snapshot!(show("please\n    /plan"), @"");
}

#[test]
fn mid_line_does_not_count() {
    insta::assert_snapshot!(show("please /apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn word_boundary_planned() {
    insta::assert_snapshot!(show("/planned maintenance tonight"), @"");
}

#[test]
fn word_boundary_applyx() {
    insta::assert_snapshot!(show("/applyx 3f9a2c1b7d4e"), @"");
}

#[test]
fn word_boundary_hyphen() {
    insta::assert_snapshot!(show("/apply-all"), @"");
}

#[test]
fn word_boundary_slash() {
    insta::assert_snapshot!(show("/plan/live/dev"), @"");
}

#[test]
fn space_after_slash_is_not_a_command() {
    insta::assert_snapshot!(show("/ plan"), @"");
}

#[test]
fn bare_slash() {
    insta::assert_snapshot!(show("/\n//plan"), @"");
}

#[test]
fn other_bots_commands_are_ignored() {
    insta::assert_snapshot!(show("/assign @me\n/approve\n/retest\n/lgtm cancel"), @"");
}

#[test]
fn escaped_slash_does_not_count() {
    insta::assert_snapshot!(show("\\/apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn byte_order_mark() {
    insta::assert_snapshot!(show("\u{feff}/plan"), @"/plan");
}

#[test]
fn unicode_around() {
    insta::assert_snapshot!(show("Merci 🙏 déjà vu\n/plan live/dev/vpc\n日本語のコメント"), @"/plan live/dev/vpc");
}

#[test]
fn heading_list_and_link_are_not_line_starts() {
    insta::assert_snapshot!(show("# /plan\n- /unlock\n[/help](https://example.com)"), @"");
}

#[test]
fn list_item_continuation_counts() {
    insta::assert_snapshot!(show("- reviewed the vpc\n/plan"), @"/plan");
}

#[test]
fn details_block_counts() {
    insta::assert_snapshot!(show("<details>\n<summary>Commands</summary>\n\n/plan live/dev/vpc\n</details>"), @"/plan live/dev/vpc");
}

#[test]
fn details_block_without_blank_line_counts() {
    insta::assert_snapshot!(show("<details><summary>x</summary>\n/unlock\n</details>"), @"/unlock");
}

// Several commands.

#[test]
fn several_commands_in_order() {
    insta::assert_snapshot!(show("/plan\n/apply 3f9a2c1b7d4e\n/unlock\n/help"), @r#"
        /plan
        /apply 3f9a2c1b7d4e
        /unlock
        /help
    "#);
}

#[test]
fn commands_and_mistakes_in_order() {
    insta::assert_snapshot!(show("/plan live/dev/vpc\n/Apply 3f9a2c1b7d4e\n/help"), @r#"
        /plan live/dev/vpc
        error on `/Apply 3f9a2c1b7d4e`: Commands are lowercase: post `/apply 3f9a2c1b7d4e` in a new comment (`/Apply` is not read).
        /help
    "#);
}

#[test]
fn repeated_command_is_returned_twice() {
    insta::assert_snapshot!(show("/plan\n/plan"), @r#"
        /plan
        /plan
    "#);
}

// Fenced code.

#[test]
fn backtick_fence() {
    insta::assert_snapshot!(show("```\n/apply 3f9a2c1b7d4e\n```"), @"");
}

#[test]
fn tilde_fence() {
    insta::assert_snapshot!(show("~~~\n/apply 3f9a2c1b7d4e\n~~~"), @"");
}

#[test]
fn fence_with_info_string() {
    insta::assert_snapshot!(show("```bash title=\"x\"\n/plan\n```\n/unlock"), @"/unlock");
}

#[test]
fn command_after_fence_counts() {
    insta::assert_snapshot!(show("```\nterraform plan\n```\n/plan"), @"/plan");
}

#[test]
fn fence_interrupts_paragraph() {
    insta::assert_snapshot!(show("output:\n```\n/unlock\n```"), @"");
}

#[test]
fn indented_fence() {
    insta::assert_snapshot!(show("   ```\n/plan\n   ```\n/help"), @"/help");
}

#[test]
fn nested_fences() {
    insta::assert_snapshot!(show("````md\n```\n/plan\n```\n/unlock\n````\n/help"), @"/help");
}

#[test]
fn tilde_does_not_close_backtick_fence() {
    insta::assert_snapshot!(show("```\n~~~\n/plan\n```"), @"");
}

#[test]
fn longer_closing_fence_closes() {
    insta::assert_snapshot!(show("```\n/plan\n``````\n/help"), @"/help");
}

#[test]
fn closing_fence_with_info_string_does_not_close() {
    insta::assert_snapshot!(show("```\n```bash\n/plan\n```\n/help"), @"/help");
}

#[test]
fn unclosed_fence_swallows_the_rest() {
    insta::assert_snapshot!(show("/help\n```\n/plan\n\n/unlock"), @"/help");
}

#[test]
fn backticks_with_backtick_info_are_not_a_fence() {
    insta::assert_snapshot!(show("``` a`b\n/plan"), @"/plan");
}

#[test]
fn indented_code_block_after_blank_line() {
    insta::assert_snapshot!(show("Example:\n\n    /plan\n    /unlock\n\n/help"), @"/help");
}

// Code spans.

#[test]
fn code_span_at_line_start() {
    insta::assert_snapshot!(show("`/apply 3f9a2c1b7d4e`"), @"");
}

#[test]
fn code_span_across_lines() {
    insta::assert_snapshot!(show("type `the\n/apply 3f9a2c1b7d4e` line"), @"");
}

#[test]
fn double_backtick_span_across_lines() {
    insta::assert_snapshot!(show("a `` ` \n/plan ``"), @"");
}

#[test]
fn unclosed_backtick_is_literal() {
    insta::assert_snapshot!(show("don`t\n/plan"), @"/plan");
}

#[test]
fn escaped_backtick_opens_no_span() {
    insta::assert_snapshot!(show("a \\` b\n/plan\nc `"), @"/plan");
}

#[test]
fn span_closes_before_next_line() {
    insta::assert_snapshot!(show("`code`\n/plan"), @"/plan");
}

// Block quotes.

#[test]
fn quoted_command() {
    insta::assert_snapshot!(show("> /apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn quoted_without_space() {
    insta::assert_snapshot!(show(">/apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn nested_quote() {
    insta::assert_snapshot!(show("> > /plan\n>> /unlock"), @"");
}

#[test]
fn quote_lazy_continuation() {
    insta::assert_snapshot!(show("> you said\n/apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn quote_lazy_continuation_over_several_lines() {
    insta::assert_snapshot!(show("> you said\nplease\n/apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn blank_line_ends_quote() {
    insta::assert_snapshot!(show("> /apply 3f9a2c1b7d4e\n\n/plan"), @"/plan");
}

#[test]
fn empty_quote_line_ends_quoted_paragraph() {
    insta::assert_snapshot!(show("> quoted\n>\n/plan"), @"/plan");
}

#[test]
fn heading_ends_quote() {
    insta::assert_snapshot!(show("> quoted\n# Next\n/plan"), @"/plan");
}

#[test]
fn quoted_fence_ends_with_the_quote() {
    insta::assert_snapshot!(show("> ```\n> /unlock\n/plan"), @"/plan");
}

#[test]
fn email_reply() {
    insta::assert_snapshot!(show("On Mon, Ana wrote:\n> /apply 3f9a2c1b7d4e\n\nNot yet.\n/unlock"), @"/unlock");
}

// HTML.

#[test]
fn html_comment() {
    insta::assert_snapshot!(show("<!-- /apply 3f9a2c1b7d4e -->"), @"");
}

#[test]
fn multi_line_html_comment() {
    insta::assert_snapshot!(show("<!--\n/apply 3f9a2c1b7d4e\n\n/unlock\n-->\n/plan"), @"/plan");
}

#[test]
fn unclosed_html_comment_swallows_the_rest() {
    insta::assert_snapshot!(show("<!-- template\n/plan"), @"");
}

#[test]
fn html_comment_after_command_is_removed() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e <!-- reviewed with Ana -->"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn inline_html_comment_across_lines() {
    insta::assert_snapshot!(show("/plan <!-- not\n/apply 3f9a2c1b7d4e\n-->"), @"/plan");
}

#[test]
fn html_comment_line_then_command() {
    insta::assert_snapshot!(show("<!-- cascade -->\n/plan"), @"/plan");
}

#[test]
fn pre_block() {
    insta::assert_snapshot!(show("<pre>\n/plan\n</pre>\n/help"), @"/help");
}

// Where CommonMark's reading (pulldown-cmark) decides, and where cascade hides more.

#[test]
fn quote_inside_a_list_item() {
    insta::assert_snapshot!(show("- > quoted\n/apply 3f9a2c1b7d4e"), @"");
}

#[test]
fn quote_inside_html() {
    insta::assert_snapshot!(show("<div>\n> quoted\n/plan"), @"");
}

#[test]
fn code_inside_details() {
    insta::assert_snapshot!(show("<details>\n```\n/plan\n```\n</details>\n/help"), @"/help");
}

#[test]
fn code_span_across_lines_inside_details() {
    insta::assert_snapshot!(show("<details>\n`a\n/plan`\n</details>"), @"");
}

#[test]
fn link_reference_definition() {
    insta::assert_snapshot!(show("[a]:\n/plan"), @"");
}

/// A lone `\r` ends a line, as the forge renders it: what follows starts a line, and a fence
/// after it opens a code block.
#[test]
fn lone_carriage_return_ends_a_line() {
    insta::assert_snapshot!(show("Thanks\r/plan"), @"/plan");
    insta::assert_snapshot!(show("a\r```\r/plan\r```\r/help"), @"/help");
}

/// A quoted heading, list item or HTML block has no lazy continuation line.
#[test]
fn line_after_a_quoted_heading_is_not_quoted() {
    insta::assert_snapshot!(show("> # Title\n/plan"), @"/plan");
}

#[test]
fn fence_in_a_list_item_ends_with_the_item() {
    insta::assert_snapshot!(show("1. a\n   ```\n/plan"), @"/plan");
}

#[test]
fn pre_in_a_quote_ends_with_the_quote() {
    insta::assert_snapshot!(show("> <pre>\n\n/plan"), @"/plan");
}

/// CommonMark ends the comment with the list item, but the browser reads on up to `-->`.
#[test]
fn unclosed_comment_in_a_list_item_hides_up_to_its_end() {
    insta::assert_snapshot!(show("- <!-- note\n/apply 3f9a2c1b7d4e\n-->\n/help"), @"/help");
}

#[test]
fn unclosed_comment_in_a_quote_hides_up_to_its_end() {
    insta::assert_snapshot!(show("> <!--\n/plan\n-->\n/help"), @"/help");
}

#[test]
fn script_in_a_list_item_hides_up_to_its_end_tag() {
    insta::assert_snapshot!(show("- <script>\n/plan\n</script>\n/help"), @"/help");
}

#[test]
fn unclosed_inline_comment_hides_up_to_a_blank_line() {
    insta::assert_snapshot!(show("a <!-- x\n# h\n/plan\n\n/help"), @"/help");
}

#[test]
fn escaped_comment_opener_hides_nothing() {
    insta::assert_snapshot!(show("a \\<!-- x\n/plan"), @"/plan");
}

/// pulldown-cmark ends a `<pre>` block only at `</pre>` in lower case.
#[test]
fn upper_case_end_tag_does_not_end_pre() {
    insta::assert_snapshot!(show("<pre>\n/plan\n</PRE>\n/help"), @"");
}

/// pulldown-cmark reads a line holding only an end tag as the start of an HTML block, which
/// runs to the next blank line.
#[test]
fn lone_end_tag_hides_up_to_a_blank_line() {
    insta::assert_snapshot!(show("</pre>\n/plan\n\n/help"), @"/help");
}
