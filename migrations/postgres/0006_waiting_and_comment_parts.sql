-- PostgreSQL twin of migrations/0006_waiting_and_comment_parts.sql. Pull requests
-- waiting for another pull request's unit locks: stored, so a restart still plans the
-- waiting one again once the holder has released its locks.
CREATE TABLE waiting (
    repo     TEXT NOT NULL,
    pr       BIGINT NOT NULL,       -- the pull request that could not plan some units
    holder   BIGINT NOT NULL,       -- the pull request holding them
    PRIMARY KEY (repo, pr, holder)
);
CREATE INDEX waiting_by_holder ON waiting (repo, holder);

-- The plan comment's parts after the first (pull_requests.comment_id), edited in place
-- on the next plan and deleted when a plan needs fewer parts.
CREATE TABLE comment_parts (
    repo        TEXT NOT NULL,
    number      BIGINT NOT NULL,
    part        BIGINT NOT NULL,    -- 2, 3, …
    comment_id  BIGINT NOT NULL,
    PRIMARY KEY (repo, number, part)
);
