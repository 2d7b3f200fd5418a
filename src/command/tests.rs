//! One line of comment text in, what `parse_comment` makes of it out: one line per command
//! or reply, in order.

use super::*;

pub(super) fn show(body: &str) -> String {
    parse_comment(body)
        .iter()
        .map(|parsed| match parsed {
            Parsed::Command(command) => command.to_string(),
            Parsed::Error(error) => format!("error on `{}`: {}", error.line, error.message),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// /plan

#[test]
fn plan_units() {
    insta::assert_snapshot!(show("/plan live/dev/vpc live/dev/app"), @"/plan live/dev/vpc live/dev/app");
}

#[test]
fn plan_units_separated_by_commas() {
    insta::assert_snapshot!(show("/plan live/dev/vpc, live/dev/app,live/prod/app"), @"/plan live/dev/vpc live/dev/app live/prod/app");
}

#[test]
fn plan_units_extra_whitespace() {
    insta::assert_snapshot!(show("/plan    live/dev/vpc \t live/dev/app   "), @"/plan live/dev/vpc live/dev/app");
}

#[test]
fn plan_units_normalised() {
    insta::assert_snapshot!(show("/plan ./live/dev/vpc/ live/dev/app"), @"/plan live/dev/vpc live/dev/app");
}

/// A backslash is part of a directory's name: `live\base` is its own unit, not `live/base`.
#[test]
fn plan_units_keep_backslashes() {
    insta::assert_snapshot!(show("/plan live\\base live/base"), @r"/plan live\base live/base");
}

#[test]
fn plan_duplicate_units_once() {
    insta::assert_snapshot!(show("/plan live/dev/vpc ./live/dev/vpc live/dev/vpc/"), @"/plan live/dev/vpc");
}

#[test]
fn plan_root_unit() {
    insta::assert_snapshot!(show("/plan ."), @"/plan .");
}

#[test]
fn plan_units_in_code_spans() {
    insta::assert_snapshot!(show("/plan `live/dev/vpc` `live/dev/app`"), @"/plan live/dev/vpc live/dev/app");
}

#[test]
fn plan_unicode_unit() {
    insta::assert_snapshot!(show("/plan live/dév/vpc"), @"/plan live/dév/vpc");
}

#[test]
fn plan_trailing_period() {
    insta::assert_snapshot!(show("/plan live/dev/vpc."), @"/plan live/dev/vpc");
}

#[test]
fn plan_period_inside_code_span_is_kept() {
    insta::assert_snapshot!(show("/plan `live/dev/vpc.`"), @"/plan `live/dev/vpc.`");
}

#[test]
fn plan_period_before_code_span_end_and_after_it() {
    insta::assert_snapshot!(show("/plan `live/dev/vpc.`."), @"/plan `live/dev/vpc.`");
}

/// Found by the `command` fuzz target: the unit `dev/app.` was shown as `/plan dev/app.`,
/// which reads back as `dev/app`.
#[test]
fn plan_unit_ending_in_period_reads_back_as_shown() {
    insta::assert_snapshot!(show("/plan dev/app./"), @"/plan `dev/app.`");
    let shown = show("/plan dev/app./");
    assert_eq!(show(&shown), shown);
}

/// Found by the `command` fuzz target: `a`/`` became the unit ``a` `` (backticks trimmed,
/// then the trailing slash), shown as `/plan a``, which reads back as `a`.
#[test]
fn plan_backtick_inside_a_unit() {
    insta::assert_snapshot!(show("/plan a`/`"), @"error on `/plan a`/``: `/plan` cannot use `` a`/` ``: a backtick is not part of a unit path (put the whole path in one code span, like `live/dev/vpc`). Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

/// Found by the `command` fuzz target: a backtick that opens a code span is not one around
/// the argument, so it stays, and the unit is refused.
#[test]
fn plan_backtick_opening_a_span_across_arguments() {
    insta::assert_snapshot!(show("/plan a` b`"), @"error on `/plan a` b``: `/plan` cannot use `` a` ``: a backtick is not part of a unit path (put the whole path in one code span, like `live/dev/vpc`). Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

/// Found by the `command` fuzz target: `<!--` inside a code span is text, so it is shown in
/// one, where it cannot start a comment.
#[test]
fn plan_comment_opener_in_a_code_span_reads_back_as_shown() {
    insta::assert_snapshot!(show("/plan `a<!--b`"), @"/plan `a<!--b`");
    let shown = show("/plan `a<!--b`");
    assert_eq!(show(&shown), shown);
}

/// Found by the `command` fuzz target: `./-` is the unit `-`, which was shown as `/plan -`,
/// an option.
#[test]
fn plan_unit_starting_with_a_dash_reads_back_as_shown() {
    insta::assert_snapshot!(show("/plan ./-x"), @"/plan ./-x");
    let shown = show("/plan ./-x");
    assert_eq!(show(&shown), shown);
}

/// Found by the `command` fuzz target: `.//plan` normalises to the absolute `/plan`.
#[test]
fn plan_path_absolute_once_normalised() {
    insta::assert_snapshot!(show("/plan .//etc"), @"error on `/plan .//etc`: `/plan` cannot use `.//etc`: it is an absolute path, and unit paths start at the repository root. Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

#[test]
fn plan_double_backtick_span() {
    insta::assert_snapshot!(show("/plan ``live/dev/vpc``"), @"/plan live/dev/vpc");
}

#[test]
fn plan_alone_with_period() {
    insta::assert_snapshot!(show("/plan."), @"/plan");
}

#[test]
fn plan_parent_dir() {
    insta::assert_snapshot!(show("/plan ../other-repo"), @"error on `/plan ../other-repo`: `/plan` cannot use `../other-repo`: unit paths cannot contain `..`. Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

#[test]
fn plan_parent_dir_inside() {
    insta::assert_snapshot!(show("/plan live/../../etc"), @"error on `/plan live/../../etc`: `/plan` cannot use `live/../../etc`: unit paths cannot contain `..`. Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

#[test]
fn plan_parent_dir_with_period() {
    insta::assert_snapshot!(show("/plan live/.."), @"error on `/plan live/..`: `/plan` cannot use `live/..`: unit paths cannot contain `..`. Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

#[test]
fn plan_absolute() {
    insta::assert_snapshot!(show("/plan /live/dev/vpc"), @"error on `/plan /live/dev/vpc`: `/plan` cannot use `/live/dev/vpc`: it is an absolute path, and unit paths start at the repository root. Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

#[test]
fn plan_windows_absolute() {
    insta::assert_snapshot!(show("/plan C:\\live\\dev"), @r#"error on `/plan C:\live\dev`: `/plan` cannot use `C:\live\dev`: it is an absolute path, and unit paths start at the repository root. Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment."#);
}

#[test]
fn plan_glob_star() {
    insta::assert_snapshot!(show("/plan live/*/vpc"), @"/plan live/*/vpc");
}

#[test]
fn plan_glob_question_mark() {
    insta::assert_snapshot!(show("/plan live/dev/vpc?"), @"/plan live/dev/vpc?");
}

#[test]
fn plan_glob_class() {
    insta::assert_snapshot!(show("/plan live/[dp]*/vpc"), @"/plan live/[dp]*/vpc");
}

#[test]
fn plan_glob_braces() {
    insta::assert_snapshot!(show("/plan live/{dev,prod}/vpc"), @r#"error on `/plan live/{dev,prod}/vpc`: `/plan` cannot use `live/{dev`: it is not a valid glob (unclosed alternate group; missing '}' \(maybe escape '{' with '\[{\]'?\)); use `*`, `**`, `?`, `[abc]` or `{a,b}`. Post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment."#);
}

#[test]
fn plan_unknown_flag() {
    insta::assert_snapshot!(show("/plan --foo"), @"error on `/plan --foo`: `/plan` has no option `--foo`: post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

#[test]
fn plan_terraform_style_flag() {
    insta::assert_snapshot!(show("/plan live/dev/vpc -target=aws_vpc.main"), @"error on `/plan live/dev/vpc -target=aws_vpc.main`: `/plan` has no option `-target=aws_vpc.main`: post `/plan` to re-plan every unit this PR affects, or name units by their path from the repository root or a glob, like `/plan live/dev/vpc live/prod/**`, in a new comment.");
}

// /apply

#[test]
fn apply_id() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn apply_uppercase_id_normalised() {
    insta::assert_snapshot!(show("/apply 3F9A2C1B7D4E"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn apply_full_length_id() {
    insta::assert_snapshot!(show(&format!("/apply {}", "ab".repeat(32))), @"/apply abababababababababababababababababababababababababababababababab");
}

#[test]
fn apply_id_with_period() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e."), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn apply_id_with_comma() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e,"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn apply_id_in_code_span() {
    insta::assert_snapshot!(show("/apply `3f9a2c1b7d4e`"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn apply_after_non_breaking_space() {
    insta::assert_snapshot!(show("/apply\u{a0}3f9a2c1b7d4e"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn apply_missing_id() {
    insta::assert_snapshot!(show("/apply"), @"error on `/apply`: `/apply` needs the plan id from the plan comment, like `/apply 3f9a2c1b7d4e`; post it in a new comment.");
}

#[test]
fn approve_policies_takes_one_plan_id() {
    insta::assert_snapshot!(show("/approve-policies 3f9a2c1b7d4e."), @"/approve-policies 3f9a2c1b7d4e");
    insta::assert_snapshot!(show("/approve-policies"), @"error on `/approve-policies`: `/approve-policies` needs the plan id from the plan comment, like `/approve-policies 3f9a2c1b7d4e`; post it in a new comment.");
    insta::assert_snapshot!(show("/approve-policies a b"), @"error on `/approve-policies a b`: `/approve-policies` takes one plan id, but this line has 2 (`a`, `b`): post `/approve-policies` with the plan id from the latest plan comment, like `/approve-policies 3f9a2c1b7d4e`, in a new comment.");
    // Another bot's `/approve` is not ours.
    insta::assert_snapshot!(show("/approve"), @"");
}

#[test]
fn apply_two_ids() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e 0123456789ab"), @"error on `/apply 3f9a2c1b7d4e 0123456789ab`: `/apply` takes one plan id, but this line has 2 (`3f9a2c1b7d4e`, `0123456789ab`): post `/apply` with the plan id from the latest plan comment, like `/apply 3f9a2c1b7d4e`, in a new comment.");
}

#[test]
fn apply_id_and_words_are_units() {
    // Words after the id are globs over the plan's units; the bot says which match none.
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e please 🚀"), @"/apply 3f9a2c1b7d4e please 🚀");
}

#[test]
fn apply_units_as_paths_and_globs() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e ./dev/dns/ live/*/vpc prod/** dev/dns"), @"/apply 3f9a2c1b7d4e dev/dns live/*/vpc prod/**");
}

#[test]
fn apply_unit_outside_the_repository() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e ../etc"), @"error on `/apply 3f9a2c1b7d4e ../etc`: `/apply` cannot use `../etc`: unit paths cannot contain `..`. Post `/apply` with the plan id and the units to apply, by their path from the repository root or a glob, like `/apply 3f9a2c1b7d4e live/dev/**`, in a new comment.");
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e /etc/*"), @"error on `/apply 3f9a2c1b7d4e /etc/*`: `/apply` cannot use `/etc/*`: it is an absolute path, and unit paths start at the repository root. Post `/apply` with the plan id and the units to apply, by their path from the repository root or a glob, like `/apply 3f9a2c1b7d4e live/dev/**`, in a new comment.");
}

#[test]
fn apply_unit_glob_unreadable() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4e live/[dev"), @r#"error on `/apply 3f9a2c1b7d4e live/[dev`: `/apply` cannot use `live/[dev`: it is not a valid glob (unclosed character class; missing '\]'); use `*`, `**`, `?`, `[abc]` or `{a,b}`. Post `/apply` with the plan id and the units to apply, by their path from the repository root or a glob, like `/apply 3f9a2c1b7d4e live/dev/**`, in a new comment."#);
}

#[test]
fn apply_same_id_twice_takes_both_units_and_whole_wins() {
    let read = read_comment(
        "/apply 3f9a2c1b7d4e dev/dns\n/apply 3f9a2c1b7d4e global/*",
        &Spelling::GITHUB,
    );
    insta::assert_snapshot!(read.commands[0].to_string(), @"/apply 3f9a2c1b7d4e dev/dns global/*");
    let read = read_comment(
        "/apply 3f9a2c1b7d4e dev/dns\n/apply 3f9a2c1b7d4e",
        &Spelling::GITHUB,
    );
    insta::assert_snapshot!(read.commands[0].to_string(), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn apply_not_hex() {
    insta::assert_snapshot!(show("/apply 3f9a2c1b7d4g"), @"error on `/apply 3f9a2c1b7d4g`: `3f9a2c1b7d4g` is not a plan id: `g` is not a hexadecimal digit; a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`. Post the corrected `/apply` line in a new comment.");
}

#[test]
fn apply_placeholder() {
    insta::assert_snapshot!(show("/apply <hash>"), @"error on `/apply <hash>`: `<hash>` is not a plan id: `<` is not a hexadecimal digit; a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`. Post the corrected `/apply` line in a new comment.");
}

#[test]
fn apply_too_short() {
    insta::assert_snapshot!(show("/apply 3f9a2c"), @"error on `/apply 3f9a2c`: `3f9a2c` is too short for a plan id (6 characters); a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`. Post the corrected `/apply` line in a new comment.");
}

#[test]
fn apply_too_long() {
    insta::assert_snapshot!(show(&format!("/apply {}", "a".repeat(65))), @"error on `/apply aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`: `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa` is too long for a plan id (65 characters); a plan id is the 12 hexadecimal characters (0-9, a-f) shown in the plan comment, as in `/apply 3f9a2c1b7d4e`. Post the corrected `/apply` line in a new comment.");
}

#[test]
fn apply_flag() {
    insta::assert_snapshot!(show("/apply --force 3f9a2c1b7d4e"), @"error on `/apply --force 3f9a2c1b7d4e`: `/apply` has no option `--force`: post `/apply` with the plan id from the latest plan comment, like `/apply 3f9a2c1b7d4e`, in a new comment.");
}

#[test]
fn apply_many_ids_listed_briefly() {
    insta::assert_snapshot!(show("/apply a 000000000001 2 3 4 5 6"), @"error on `/apply a 000000000001 2 3 4 5 6`: `/apply` takes one plan id, but this line has 7 (`a`, `000000000001`, `2`, `3`, `4`, and 2 more): post `/apply` with the plan id from the latest plan comment, like `/apply 3f9a2c1b7d4e`, in a new comment.");
}

// /unlock and /help

#[test]
fn unlock_with_argument() {
    insta::assert_snapshot!(show("/unlock please"), @"error on `/unlock please`: `/unlock` takes no arguments, but this line has `please`: post `/unlock` on a line of its own in a new comment.");
}

#[test]
fn unlock_with_flag() {
    insta::assert_snapshot!(show("/unlock --force"), @"error on `/unlock --force`: `/unlock` takes no arguments, but this line has `--force`: post `/unlock` on a line of its own in a new comment.");
}

#[test]
fn help_with_argument() {
    insta::assert_snapshot!(show("/help apply"), @"error on `/help apply`: `/help` takes no arguments, but this line has `apply`: post `/help` on a line of its own in a new comment.");
}

#[test]
fn help_with_period() {
    insta::assert_snapshot!(show("/help."), @"/help");
}

#[test]
fn long_argument_is_shortened() {
    insta::assert_snapshot!(show(&format!("/unlock {}", "x".repeat(100))), @"error on `/unlock xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`: `/unlock` takes no arguments, but this line has `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…`: post `/unlock` on a line of its own in a new comment.");
}

#[test]
fn argument_with_backtick_is_quoted() {
    insta::assert_snapshot!(show("/help a`b"), @"error on `/help a`b`: `/help` takes no arguments, but this line has ``a`b``: post `/help` on a line of its own in a new comment.");
}

// Case.

#[test]
fn apply_capitalised() {
    insta::assert_snapshot!(show("/Apply 3f9a2c1b7d4e"), @"error on `/Apply 3f9a2c1b7d4e`: Commands are lowercase: post `/apply 3f9a2c1b7d4e` in a new comment (`/Apply` is not read).");
}

#[test]
fn plan_upper_case() {
    insta::assert_snapshot!(show("/PLAN live/dev/vpc"), @"error on `/PLAN live/dev/vpc`: Commands are lowercase: post `/plan live/dev/vpc` in a new comment (`/PLAN` is not read).");
}

#[test]
fn help_capitalised_with_period() {
    insta::assert_snapshot!(show("/Help."), @"error on `/Help.`: Commands are lowercase: post `/help` in a new comment (`/Help` is not read).");
}

#[test]
fn capitalised_non_command_is_ignored() {
    insta::assert_snapshot!(show("/Planned\n/Applyx"), @"");
}

// /help reply.

#[test]
fn help_reply() {
    insta::assert_snapshot!(help_text(&Spelling::GITHUB), @r#"
        ### cascade commands

        Post a command at the start of a line in a new comment. Commands inside code, quotes or HTML comments are not read, and neither are edits to a comment; a command repeated in one comment runs once.

        | Command | What it does |
        | --- | --- |
        | `/plan [unit …]` | Re-plan every unit this PR affects, or only the named ones (paths from the repository root or globs, like `live/dev/vpc` or `live/prod/**`) and the units that depend on them. Needs the right to apply. |
        | `/apply <plan id> [unit …]` | Apply exactly the plan with this id, as shown in the plan comment: `/apply 3f9a2c1b7d4e`; or only the units of it named (paths or globs, like `/apply 3f9a2c1b7d4e live/dev/**`) with every unit they depend on, the rest left to a new plan. Who may apply, and when, is set by the repository; cascade says why when it refuses. |
        | `/destroy <unit …>` | Plan a destroy of the named units (paths or globs, like `/destroy live/dev/app`), each before the units it depends on, with a plan id of its own; `/apply` with that id destroys them. Units that depend on a named one must be named too, and units `prevent_destroy` protects are refused. Needs the right to apply. |
        | `/approve-policies <plan id>` | Approve, for exactly this plan id, the failures of the policy sets you own (`owners:` in `.cascade.yaml`), so `/apply` may go ahead. Not the PR's author; a new plan id needs a new approval. |
        | `/import <unit> <address> <id>` | Import an existing object into one unit's terraform state, like `/import live/dev/vpc aws_vpc.main vpc-0abc123`, and discard this PR's plan. Off unless the default branch's `.cascade.yaml` lists it in `commands:`; needs the right to apply. |
        | `/state rm <unit> <address>` | Remove a resource (or a whole module) from one unit's terraform state, like `/state rm live/dev/vpc aws_vpc.main`, and discard this PR's plan. Off unless the default branch's `.cascade.yaml` lists `state_rm` in `commands:`; needs the right to apply. |
        | `/unlock` | Release this PR's locks and discard its plan; `/plan` plans again. Needs the right to apply. |
        | `/help` | Show this list. |
    "#);
}

// One comment, each command at most once.

fn read(body: &str) -> String {
    let read = read_comment(body, &Spelling::GITHUB);
    let mut lines: Vec<String> = read.commands.iter().map(|c| c.to_string()).collect();
    lines.extend(
        read.mistakes
            .iter()
            .map(|m| format!("error on `{}`: {}", m.line, m.message)),
    );
    lines.join("\n")
}

#[test]
fn ninety_help_lines_are_one_help() {
    insta::assert_snapshot!(read(&"/help\n".repeat(90)), @"/help");
}

#[test]
fn repeated_commands_run_once_in_the_order_first_written() {
    insta::assert_snapshot!(read("/unlock\n/plan\n/unlock\n/help\n/plan\n/help"), @r"
    /unlock
    /plan
    /help
    ");
}

#[test]
fn plan_lines_merge_their_units() {
    insta::assert_snapshot!(read("/plan a\n/plan b a\n/plan c"), @"/plan a b c");
}

#[test]
fn a_bare_plan_wins_over_named_units() {
    insta::assert_snapshot!(read("/plan a\n/plan\n/plan b"), @"/plan");
}

#[test]
fn the_same_apply_twice_is_one_apply() {
    insta::assert_snapshot!(read("/apply 3f9a2c1b7d4e\n/apply 3f9a2c1b7d4e"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn two_different_applies_apply_nothing() {
    insta::assert_snapshot!(read("/apply 3f9a2c1b7d4e\n/plan\n/apply 0123456789ab\n/apply 3f9a2c1b7d4e"), @r"
    /plan
    error on `/apply 0123456789ab`: This comment applies 2 different plan ids (`3f9a2c1b7d4e`, `0123456789ab`), so none was applied: post `/apply` with the plan id from the latest plan comment, like `/apply 3f9a2c1b7d4e`, in a new comment.
    ");
}

#[test]
fn a_mistake_made_ninety_times_is_reported_once() {
    insta::assert_snapshot!(read(&"/apply\n/unlock now\n".repeat(90)), @r"
    error on `/apply`: `/apply` needs the plan id from the plan comment, like `/apply 3f9a2c1b7d4e`; post it in a new comment.
    error on `/unlock now`: `/unlock` takes no arguments, but this line has `now`: post `/unlock` on a line of its own in a new comment.
    ");
}

// Robustness.

proptest::proptest! {
    #[test]
    fn any_text_parses_without_panicking(body in "[ \t\r\n`~>/<!\\\\a-zA-Z0-9.,*#é🚀-]{0,120}") {
        parse_comment(&body);
    }

    #[test]
    fn every_command_reads_back_in_both_spellings(units in proptest::collection::vec("[a-z][a-z0-9/_.-]{0,12}", 0..3), id in "[0-9a-f]{12}") {
        let plan = read_comment(&format!("/plan {}", units.join(" ")), &Spelling::GITHUB).commands;
        let mut commands = plan;
        commands.extend([Command::Apply { id: PlanId::parse(&id).unwrap(), units: vec![] }, Command::Unlock, Command::Help]);
        for command in commands {
            for spelling in [&Spelling::GITHUB, &Spelling::GITLAB] {
                let typed = command.spelled(spelling);
                proptest::prop_assert_eq!(parse_comment(&typed), vec![Parsed::Command(command.clone())], "{}", typed);
            }
        }
    }
}
