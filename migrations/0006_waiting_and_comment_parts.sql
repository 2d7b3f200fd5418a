-- Pull requests waiting for another pull request's unit locks: stored, so a restart
-- still plans the waiting one again once the holder has released its locks.
CREATE TABLE waiting (
    repo     TEXT NOT NULL,
    pr       INTEGER NOT NULL,      -- the pull request that could not plan some units
    holder   INTEGER NOT NULL,      -- the pull request holding them
    PRIMARY KEY (repo, pr, holder)
);
CREATE INDEX waiting_by_holder ON waiting (repo, holder);

-- The plan comment's parts after the first (pull_requests.comment_id), edited in place
-- on the next plan and deleted when a plan needs fewer parts.
CREATE TABLE comment_parts (
    repo        TEXT NOT NULL,
    number      INTEGER NOT NULL,
    part        INTEGER NOT NULL,   -- 2, 3, …
    comment_id  INTEGER NOT NULL,
    PRIMARY KEY (repo, number, part)
);
