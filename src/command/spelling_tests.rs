//! The `cascade <command>` spelling: read on every forge (GitLab takes `/unlock` itself).

use super::tests::show;
use super::*;

#[test]
fn cascade_unlock_is_unlock() {
    insta::assert_snapshot!(show("cascade unlock"), @"/unlock");
}

#[test]
fn cascade_apply_with_an_id() {
    insta::assert_snapshot!(show("cascade apply 3f9a2c1b7d4e"), @"/apply 3f9a2c1b7d4e");
}

#[test]
fn cascade_in_any_case_then_a_tab() {
    insta::assert_snapshot!(show("CASCADE\tplan live/dev/vpc\nCascade help."), @r"
    /plan live/dev/vpc
    /help
    ");
}

#[test]
fn cascade_glued_to_the_command_is_not_a_command() {
    insta::assert_snapshot!(show("cascadeunlock\ncascade-unlock\ncascade:unlock"), @"");
}

#[test]
fn cascade_then_two_spaces_is_not_a_command() {
    insta::assert_snapshot!(show("cascade  unlock"), @"");
}

#[test]
fn cascade_in_prose_is_not_a_command() {
    insta::assert_snapshot!(show("cascade is great\nI think cascade unlock is needed\ncascade"), @"");
}

#[test]
fn cascade_commands_in_quotes_and_code_are_not_read() {
    insta::assert_snapshot!(show("> cascade unlock\n\n```\ncascade unlock\n```\n\n    cascade unlock\n\n`cascade unlock`"), @"");
}

/// Every place `tests.rs` shows a command hidden in hides it in either spelling.
#[test]
fn both_spellings_are_hidden_in_the_same_places() {
    const HIDDEN: &[&str] = &[
        "Run this:\n\n    {}",
        "\t{}",
        "please\n    {}",
        "please {}",
        "# {}\n- {}\n[{}](https://example.com)",
        "```\n{}\n```",
        "~~~\n{}\n~~~",
        "output:\n```\n{}\n```",
        "````md\n```\n{}\n```\n{}\n````",
        "```\n~~~\n{}\n```",
        "x\n```\n{}\n\n{}",
        "Example:\n\n    {}\n    {}",
        "`{}`",
        "type `the\n{}` line",
        "a `` ` \n{} ``",
        "> {}",
        ">{}",
        "> > {}\n>> {}",
        "> you said\n{}",
        "> you said\nplease\n{}",
        "<!-- {} -->",
        "<!--\n{}\n\n{}\n-->",
        "<!-- template\n{}",
        "x <!-- not\n{}\n-->",
        "<pre>\n{}\n</pre>",
        "- > quoted\n{}",
        "<div>\n> quoted\n{}",
        "<details>\n```\n{}\n```\n</details>",
        "<details>\n`a\n{}`\n</details>",
        "a\r```\r{}\r```",
        "- <!-- note\n{}\n-->",
        "> <!--\n{}\n-->",
        "- <script>\n{}\n</script>",
        "a <!-- x\n# h\n{}",
        "<pre>\n{}\n</PRE>\n{}",
        "</pre>\n{}",
    ];
    for shape in HIDDEN {
        for command in ["/apply 3f9a2c1b7d4e", "cascade apply 3f9a2c1b7d4e"] {
            let body = shape.replace("{}", command);
            assert_eq!(show(&body), "", "{body:?}");
        }
    }
}

#[test]
fn cascade_with_a_wrong_case_command_is_corrected_in_its_spelling() {
    insta::assert_snapshot!(show("Cascade Unlock"), @"error on `Cascade Unlock`: Commands are lowercase: post `cascade unlock` in a new comment (`Cascade Unlock` is not read).");
}

#[test]
fn cascade_mistakes_are_worded_for_the_forge() {
    let gitlab = |body: &str| {
        parse_comment_spelled(body, &Spelling::GITLAB)
            .into_iter()
            .map(|parsed| match parsed {
                Parsed::Command(command) => command.spelled(&Spelling::GITLAB),
                Parsed::Error(error) => error.message,
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    insta::assert_snapshot!(gitlab("cascade apply\n/unlock now\ncascade plan ../x\ncascade apply 3f9a2c1b7d4e"), @r"
    `cascade apply` needs the plan id from the plan comment, like `cascade apply 3f9a2c1b7d4e`; post it in a new comment.
    `cascade unlock` takes no arguments, but this line has `now`: post `cascade unlock` on a line of its own in a new comment.
    `cascade plan` cannot use `../x`: unit paths cannot contain `..`. Post `cascade plan` to re-plan every unit this MR affects, or name units by their path from the repository root or a glob, like `cascade plan live/dev/vpc live/prod/**`, in a new comment.
    cascade apply 3f9a2c1b7d4e
    ");
}

#[test]
fn help_reply_spelled_for_gitlab() {
    insta::assert_snapshot!(help_text(&Spelling::GITLAB), @r#"
        ### cascade commands

        Post a command at the start of a line in a new comment. Commands inside code, quotes or HTML comments are not read, and neither are edits to a comment; a command repeated in one comment runs once.

        | Command | What it does |
        | --- | --- |
        | `cascade plan [unit …]` | Re-plan every unit this MR affects, or only the named ones (paths from the repository root or globs, like `live/dev/vpc` or `live/prod/**`) and the units that depend on them. Needs the right to apply. |
        | `cascade apply <plan id> [unit …]` | Apply exactly the plan with this id, as shown in the plan comment: `cascade apply 3f9a2c1b7d4e`; or only the units of it named (paths or globs, like `cascade apply 3f9a2c1b7d4e live/dev/**`) with every unit they depend on, the rest left to a new plan. Who may apply, and when, is set by the repository; cascade says why when it refuses. |
        | `cascade destroy <unit …>` | Plan a destroy of the named units (paths or globs, like `cascade destroy live/dev/app`), each before the units it depends on, with a plan id of its own; `cascade apply` with that id destroys them. Units that depend on a named one must be named too, and units `prevent_destroy` protects are refused. Needs the right to apply. |
        | `cascade approve-policies <plan id>` | Approve, for exactly this plan id, the failures of the policy sets you own (`owners:` in `.cascade.yaml`), so `cascade apply` may go ahead. Not the MR's author; a new plan id needs a new approval. |
        | `cascade import <unit> <address> <id>` | Import an existing object into one unit's terraform state, like `cascade import live/dev/vpc aws_vpc.main vpc-0abc123`, and discard this MR's plan. Off unless the default branch's `.cascade.yaml` lists it in `commands:`; needs the right to apply. |
        | `cascade state rm <unit> <address>` | Remove a resource (or a whole module) from one unit's terraform state, like `cascade state rm live/dev/vpc aws_vpc.main`, and discard this MR's plan. Off unless the default branch's `.cascade.yaml` lists `state_rm` in `commands:`; needs the right to apply. |
        | `cascade unlock` | Release this MR's locks and discard its plan; `cascade plan` plans again. Needs the right to apply. |
        | `cascade help` | Show this list. |
    "#);
}
