//! The rule every scenario relies on: a world fails, when finished or dropped, on each
//! comment (GitHub) or note (GitLab) of the bot's that its test did not read, and what a
//! wait's condition looks at is not read. The bot's comments are made on the fake
//! directly here: no server is needed to check the worlds.

use crate::support::bot_world::{self, REPO};
use crate::support::fake_github::BOT_LOGIN;
use crate::support::fake_gitlab::BOT_USERNAME;
use crate::support::gitlab_world;
use std::panic::AssertUnwindSafe;

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_world_fails_on_the_comments_its_test_did_not_read() {
    let w = bot_world::world_unserved("").await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    for body in ["first reply", "second reply", "third reply"] {
        w.fake.user_comment(REPO, n, BOT_LOGIN, body);
    }
    w.fake.user_comment(REPO, n, "alice", "a person's comment");
    assert_eq!(w.nth_reply(n, 1).await, "first reply");
    w.until("three comments", |w| w.bot_texts(n).len() == 3)
        .await;
    let failed = tokio::spawn(w.finish())
        .await
        .expect_err("unread comments fail the world");
    let text = panic_text(failed.into_panic());
    assert!(text.contains("2 comment(s) this test never read"), "{text}");
    assert!(
        text.contains("second reply") && text.contains("third reply"),
        "{text}"
    );
    assert!(
        !text.contains("first reply") && !text.contains("a person's"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_github_world_dropped_checks_too_and_reading_every_comment_passes() {
    let w = bot_world::world_unserved("").await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.fake
        .user_comment(REPO, n, BOT_LOGIN, "a reply nobody read");
    let dropped = std::panic::catch_unwind(AssertUnwindSafe(|| drop(w)))
        .expect_err("dropping the world fails on the unread comment");
    assert!(
        panic_text(dropped).contains("a reply nobody read"),
        "the message shows the comment"
    );

    let w = bot_world::world_unserved("").await;
    let n = w.open_pr("alice", "feature", &w.head_sha, false);
    w.fake.user_comment(REPO, n, BOT_LOGIN, "a reply read");
    assert_eq!(w.bot_texts(n), ["a reply read"]);
    w.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitlab_world_fails_on_the_notes_its_test_did_not_read() {
    let w = gitlab_world::world_without_server("").await;
    let iid = w.open_mr("alice", "feature", &w.head_sha, false);
    for body in ["first note", "second note"] {
        w.fake.user_note(w.project, iid, BOT_USERNAME, body);
    }
    w.fake.user_note(w.project, iid, "bob", "a person's note");
    assert_eq!(w.nth_note(iid, 1).await, "first note");
    w.until("two notes", |w| w.bot_texts(iid).len() == 2).await;
    let failed = tokio::spawn(w.finish())
        .await
        .expect_err("an unread note fails the world");
    let text = panic_text(failed.into_panic());
    assert!(text.contains("1 note(s) this test never read"), "{text}");
    assert!(text.contains("second note"), "{text}");
    assert!(
        !text.contains("first note") && !text.contains("a person's"),
        "{text}"
    );
}
