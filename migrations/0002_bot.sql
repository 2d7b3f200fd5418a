-- What the GitHub App must not lose: deliveries (deduplicated by X-GitHub-Delivery),
-- installations, each pull request's state, and unit locks.
CREATE TABLE deliveries (
    id           TEXT PRIMARY KEY,      -- X-GitHub-Delivery: one per event, kept by redeliveries
    event        TEXT NOT NULL,
    body         BLOB NOT NULL,         -- the raw, verified body, processed after the response
    status       TEXT NOT NULL,         -- received | processed | ignored | failed
    received_at  INTEGER NOT NULL
);
CREATE INDEX deliveries_pending ON deliveries (status, received_at);

CREATE TABLE installations (
    id          INTEGER PRIMARY KEY,
    account     TEXT NOT NULL,
    active      INTEGER NOT NULL,       -- 0 once deleted
    updated_at  INTEGER NOT NULL
);

CREATE TABLE installation_repositories (
    installation_id  INTEGER NOT NULL REFERENCES installations (id),
    repo             TEXT NOT NULL,     -- owner/name
    PRIMARY KEY (installation_id, repo)
);

CREATE TABLE pull_requests (
    repo         TEXT NOT NULL,         -- owner/name
    number       INTEGER NOT NULL,
    installation_id INTEGER NOT NULL,
    clone_url    TEXT NOT NULL,
    head_sha     TEXT NOT NULL,
    base_sha     TEXT NOT NULL,
    state        TEXT NOT NULL,         -- discovering | planning | commented | applying | applied | failed | closed
    plan_id      TEXT,
    comment_id   INTEGER,               -- the cascade comment, edited in place
    check_run_id INTEGER,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (repo, number)
);

CREATE TABLE locks (
    repo       TEXT NOT NULL,
    unit       TEXT NOT NULL,
    pr         INTEGER NOT NULL,        -- the pull request holding it
    taken_at   INTEGER NOT NULL,
    PRIMARY KEY (repo, unit)
);
CREATE INDEX locks_by_pr ON locks (repo, pr);
