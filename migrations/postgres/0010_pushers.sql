-- PostgreSQL twin of migrations/0010_pushers.sql. Who pushed to each pull request, as
-- its webhook events said: an approval counts only from someone who did not push to it.
-- Kept for the pull request's life.
CREATE TABLE pushers (
    repo      TEXT NOT NULL,
    number    BIGINT NOT NULL,
    login     TEXT NOT NULL,        -- as the event spelled it; compared case-insensitively
    user_id   BIGINT,               -- the forge's user id, where the event carried it
    head_sha  TEXT NOT NULL,        -- the head of the first push recorded for them
    PRIMARY KEY (repo, number, login)
);
