//! `cascade <command>` works like `/<command>` on GitHub too, end to end over the fake
//! GitHub (GitLab runs `/unlock` as its own quick action, so cascade reads both spellings
//! everywhere); replies on GitHub keep the `/` spelling.

use crate::support::bot_world;
use crate::support::replies::redacted;

use bot_world::{REPO, push_change, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cascade_unlock_releases_the_locks_like_slash_unlock() {
    let w = world().await;
    let first = w.open_pr("alice", "feature", &w.head_sha, false);
    assert_eq!(w.send_pr(first, "opened").await, 202);
    w.until("the first plan", |w| w.checks_done(&w.head_sha))
        .await;
    let plan = w.plan_comment(first);
    assert!(plan.contains("/apply "), "{plan}");
    let other = push_change(&w, "other", "global/dns/main.tf", "a competing change");
    let second = w.open_pr("dave", "other", &other, false);
    assert_eq!(w.send_pr(second, "opened").await, 202);
    w.until("the second plan", |w| w.checks_done(&other)).await;
    assert!(w.bot_texts(second)[0].contains("locked by #1"));

    // Refused for a reader, in GitHub's spelling.
    w.comment(first, "mallory", "Cascade unlock").await;
    let text = w.nth_reply(first, 2).await;
    assert!(text.contains("@mallory cannot run `/unlock`"), "{text}");
    insta::assert_snapshot!("unlock_refused_reader_in_cascade_spelling", redacted(&text));
    assert!(w.bot_texts(second)[0].contains("locked by #1"));

    // A writer's `cascade unlock` releases the locks; the waiting one plans by itself.
    w.fake.set_permission(REPO, "bob", "write");
    w.comment(first, "bob", "cascade unlock").await;
    let text = w.nth_reply(first, 3).await;
    assert!(
        text.starts_with("Released ") && !text.starts_with("Released 0"),
        "{text}"
    );
    assert!(text.contains("Comment `/plan` to plan again."), "{text}");
    insta::assert_snapshot!("unlock_released_in_cascade_spelling", redacted(&text));
    w.until("the second planned without the lock", |w| {
        !w.bot_texts(second)[0].contains("locked by #1")
    })
    .await;
}
