//! Text from a pull request is inert in what cascade posts on GitHub, end to end through
//! `cascade serve` over the fake GitHub with the real terraform: unit directories named to
//! ping a team (`notify @acme/platform-team`) or to break code spans and tables (backtick
//! runs, `|`), and a precondition whose `error_message` carries a mention, a link, an image
//! and a tag. The plan comment, the check run and the replies are read back with an
//! independent Markdown parser (`support::markdown_oracle`): nothing in them links,
//! mentions, references or adds HTML, and every hostile name is shown whole, as code.

use crate::support;
use crate::support::bot_world;

use bot_world::{World, world};
use support::hostile::{
    GATE_UNIT, MENTION_UNIT, MESSAGE, TICKS_UNIT, borrowed, hostile_units, resource, unboxed,
    unit_files,
};
use support::markdown_oracle::assert_inert;

/// Opens a pull request adding `files` and waits for its plan: the comment and the check.
async fn planned(w: &World, branch: &str, files: &[(String, String)]) -> (u64, String, String) {
    let (n, head) = w.open_adding("mallory", branch, &borrowed(files));
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the plan", |w| {
        w.checks_done(&head) && !w.bot_texts(n).is_empty()
    })
    .await;
    (n, head.clone(), w.bot_texts(n).join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_unit_names_and_an_error_message_are_inert_in_the_comment_and_the_check() {
    let w = world().await;
    let (_, head, comment) = planned(&w, "hostile", &hostile_units()).await;
    let reading = assert_inert(&comment, &[]);
    for unit in [MENTION_UNIT, TICKS_UNIT, GATE_UNIT] {
        reading.assert_code(unit);
    }
    assert!(
        comment.contains("`terraform plan` failed (exit code 1)"),
        "the gate failed: {comment}"
    );
    assert!(comment.contains("terraform_data.mention"), "{comment}");

    // The check's failure log shows the message whole, in its code block.
    let check = w.check_now(&head);
    assert_inert(&check.summary, &[]);
    let log = assert_inert(&check.text, &[]);
    log.assert_code(GATE_UNIT);
    assert!(unboxed(&log).contains(MESSAGE), "{}", check.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_hostile_unit_and_a_refusal_echoing_it_are_inert() {
    let w = world().await;
    let (first, _, _) = planned(&w, "hostile", &hostile_units()).await;

    // A second pull request adding the same unit, which the first one holds: its comment
    // names the unit as locked.
    let more = unit_files(MENTION_UNIT, resource("more"));
    let (second, _, comment) = planned(&w, "more", &more).await;
    let reading = assert_inert(&comment, &[]);
    reading.assert_code(MENTION_UNIT);
    assert!(
        comment.contains(&format!("locked by #{first}")),
        "{comment}"
    );

    // A reader's `/plan` naming a unit (one ending in a period is written in a code span,
    // and cascade echoes the command that way) is refused, and the refusal shows the
    // command as code: the team is not pinged.
    w.comment(second, "mallory", "/plan `dev/@acme/platform-team.`")
        .await;
    let reply = w.nth_reply(second, 2).await;
    let reading = assert_inert(&reply, &["@mallory"]);
    reading.assert_code("/plan `dev/@acme/platform-team.`");
    insta::assert_snapshot!("reply_reader_plan_hostile_unit", reply);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cycle_through_a_unit_named_to_close_its_block_stays_in_the_block() {
    let w = world().await;
    // A directory name may hold newlines: this one ends the block a fixed fence would
    // open, then pings a team.
    let hostile = "dev/x\n```\n@acme/team";
    let depends = |path: &str| format!("dependencies {{\n  paths = [\"{path}\"]\n}}\n");
    let mut files = unit_files("dev/cy", resource("cy"));
    files[0].1 = depends("../x\\n```\\n@acme/team");
    files.extend(unit_files(hostile, resource("x")));
    files[2].1 = depends("../../cy");
    let (n, head) = w.open_adding("mallory", "cycle", &borrowed(&files));
    assert_eq!(w.send_pr(n, "opened").await, 202);
    w.until("the refusal to plan", |w| {
        w.checks_done(&head) && !w.bot_texts(n).is_empty()
    })
    .await;
    let comment = w.bot_texts(n).join("\n");
    assert!(comment.contains("has a cycle"), "{comment}");
    let reading = assert_inert(&comment, &[]);
    reading.assert_in_block(&format!("dev/cy -> {hostile} -> dev/cy"));
    assert_inert(&w.check_now(&head).summary, &[]).assert_in_block(hostile);
}
