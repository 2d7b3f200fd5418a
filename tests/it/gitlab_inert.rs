//! Text from a merge request is inert in what cascade posts on GitLab, end to end through
//! `cascade serve` over the fake GitLab with the real terraform: the hostile units of
//! `support::hostile` (a directory named to ping a team, one with backtick runs and a table
//! bar, a precondition whose `error_message` carries a mention, a link, an image and a tag).
//! GitLab expands more than GitHub (`!12`, `~label`, `%milestone`, `$12`, `&12`), and its
//! note keeps the failed unit's message in a collapsed code block; the note and the replies
//! are read back with an independent Markdown parser (`support::markdown_oracle`).

use crate::support;
use crate::support::gitlab_world;

use gitlab_world::{AUTHOR, REPORTER_USER, World, world};
use support::hostile::{
    GATE_UNIT, MENTION_UNIT, MESSAGE, TICKS_UNIT, borrowed, hostile_units, resource, unboxed,
    unit_files,
};
use support::markdown_oracle::assert_inert;

/// Opens a merge request adding `files` and waits for its note and finished status.
async fn planned(w: &World, branch: &str, files: &[(String, String)]) -> (u64, String) {
    let (iid, head) = w.open_adding(AUTHOR, branch, &borrowed(files));
    assert_eq!(w.send_mr(iid, "open").await, 202);
    w.until("the note and the finished status", |w| {
        w.status_done(&head) && !w.bot_texts(iid).is_empty()
    })
    .await;
    (iid, w.bot_texts(iid).join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_unit_names_and_an_error_message_are_inert_in_the_note() {
    let w = world().await;
    let (_, note) = planned(&w, "hostile", &hostile_units()).await;
    let reading = assert_inert(&note, &[]);
    for unit in [MENTION_UNIT, TICKS_UNIT, GATE_UNIT] {
        reading.assert_code(unit);
    }
    assert!(note.contains("terraform_data.mention"), "{note}");
    // GitLab has no check text: the message is in the note, whole, in its code block.
    assert!(unboxed(&reading).contains(MESSAGE), "{note}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_hostile_unit_and_a_refusal_echoing_it_are_inert() {
    let w = world().await;
    let (first, _) = planned(&w, "hostile", &hostile_units()).await;
    let more = unit_files(MENTION_UNIT, resource("more"));
    let (second, note) = planned(&w, "more", &more).await;
    let reading = assert_inert(&note, &[]);
    reading.assert_code(MENTION_UNIT);
    assert!(note.contains(&format!("locked by !{first}")), "{note}");

    // A Reporter's `cascade plan` naming a unit is refused; the refusal shows the command
    // as code, so the team is not pinged.
    w.note(
        second,
        REPORTER_USER,
        "cascade plan `dev/@acme/platform-team.`",
    )
    .await;
    w.until("the refusal", |w| w.bot_texts(second).len() >= 2)
        .await;
    let reply = w.bot_texts(second)[1].clone();
    let reading = assert_inert(&reply, &[&format!("@{REPORTER_USER}")]);
    reading.assert_code("cascade plan `dev/@acme/platform-team.`");
    insta::assert_snapshot!("reply_reporter_plan_hostile_unit", reply);
}
