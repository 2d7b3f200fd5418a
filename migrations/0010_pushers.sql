-- Who pushed to each pull request, as its webhook events said (GitHub: the sender of
-- `opened`, `synchronize` and `reopened`; GitLab: the user of a Merge Request Hook
-- update with `oldrev`). An approval counts only from someone who did not push to the
-- pull request, so a writer cannot push onto another's pull request and approve that
-- head himself. Kept for the pull request's life: a force-push that drops the commits
-- does not make their pusher an independent reviewer.
CREATE TABLE pushers (
    repo      TEXT NOT NULL,
    number    INTEGER NOT NULL,
    login     TEXT NOT NULL,        -- as the event spelled it; compared case-insensitively
    user_id   INTEGER,              -- the forge's user id, where the event carried it
    head_sha  TEXT NOT NULL,        -- the head of the first push recorded for them
    PRIMARY KEY (repo, number, login)
);
