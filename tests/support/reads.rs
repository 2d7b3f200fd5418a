//! Which of the bot's comments (GitHub) or notes (GitLab) a test read, so that a world
//! ends by failing on every one nobody read: a reply a test never looked at is a reply
//! whose wording, or whose very existence, nothing pins.
//!
//! A test reads a comment through its world's verbs (`bot_texts`, `bot_comments`,
//! `nth_reply`, `plan_id`, `plan_comment`, …); a wait's condition looking at comments
//! does not read them, and neither does asking whether one exists (`applied`).

use crate::support::fake_github::CommentSnapshot;
use crate::support::fake_gitlab::NoteSnapshot;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One comment or note the bot posted.
#[derive(Debug)]
pub struct Posted {
    pub id: u64,
    /// The pull request, merge request or issue it is on.
    pub on: u64,
    pub body: String,
}

impl From<CommentSnapshot> for Posted {
    fn from(c: CommentSnapshot) -> Posted {
        Posted {
            id: c.id,
            on: c.number,
            body: c.body,
        }
    }
}

impl From<NoteSnapshot> for Posted {
    fn from(n: NoteSnapshot) -> Posted {
        Posted {
            id: n.id,
            on: n.iid,
            body: n.body,
        }
    }
}

/// What a world's test has read.
#[derive(Default)]
pub struct Reads {
    read: Mutex<BTreeSet<u64>>,
    /// Waits whose condition is being looked at now.
    looking: AtomicUsize,
    finished: AtomicBool,
}

impl Reads {
    /// Notes that the test read the comments `ids` (unless a wait's condition looks).
    pub fn saw(&self, ids: impl IntoIterator<Item = u64>) {
        if self.looking.load(Ordering::SeqCst) == 0 {
            self.read.lock().unwrap().extend(ids);
        }
    }

    /// Runs a wait's condition: the comments it looks at are not read.
    pub fn looking<T>(&self, condition: impl FnOnce() -> T) -> T {
        self.looking.fetch_add(1, Ordering::SeqCst);
        let holds = condition();
        self.looking.fetch_sub(1, Ordering::SeqCst);
        holds
    }

    /// Whether the world was checked already.
    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }

    /// Panics listing every comment of `posted()` the test did not read; `what` names them
    /// (`comment`, `note`). A world is checked once (by `finish`, else when dropped).
    pub fn check_once(&self, what: &str, posted: impl FnOnce() -> Vec<Posted>) {
        if self.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        let posted = posted();
        let read = self.read.lock().unwrap().clone();
        let unread: Vec<String> = posted
            .into_iter()
            .filter(|p| !read.contains(&p.id))
            .map(|p| format!("- {what} {} on #{}:\n{}", p.id, p.on, p.body))
            .collect();
        assert!(
            unread.is_empty(),
            "the bot posted {} {what}(s) this test never read: read each through the world \
             (bot_texts, nth_reply, plan_comment, …) and assert what it says\n{}",
            unread.len(),
            unread.join("\n")
        );
    }
}
