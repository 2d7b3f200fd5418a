-- PostgreSQL twin of migrations/0002_bot.sql: deliveries (deduplicated by
-- X-GitHub-Delivery), installations, each pull request's state, and unit locks.
CREATE TABLE deliveries (
    id           TEXT PRIMARY KEY,      -- X-GitHub-Delivery: one per event, kept by redeliveries
    event        TEXT NOT NULL,
    body         BYTEA NOT NULL,        -- the raw, verified body, processed after the response
    status       TEXT NOT NULL,         -- received | processed | ignored | failed
    received_at  BIGINT NOT NULL,
    seq          BIGINT GENERATED ALWAYS AS IDENTITY  -- arrival order among equal received_at
);
CREATE INDEX deliveries_pending ON deliveries (status, received_at);

CREATE TABLE installations (
    id          BIGINT PRIMARY KEY,
    account     TEXT NOT NULL,
    active      BOOLEAN NOT NULL,       -- false once deleted
    updated_at  BIGINT NOT NULL
);

CREATE TABLE installation_repositories (
    installation_id  BIGINT NOT NULL REFERENCES installations (id),
    repo             TEXT NOT NULL,     -- owner/name
    PRIMARY KEY (installation_id, repo)
);

CREATE TABLE pull_requests (
    repo         TEXT NOT NULL,         -- owner/name
    number       BIGINT NOT NULL,
    installation_id BIGINT NOT NULL,
    clone_url    TEXT NOT NULL,
    head_sha     TEXT NOT NULL,
    base_sha     TEXT NOT NULL,
    state        TEXT NOT NULL,         -- discovering | planning | commented | applying | applied | failed | closed
    plan_id      TEXT,
    comment_id   BIGINT,                -- the cascade comment, edited in place
    check_run_id BIGINT,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (repo, number)
);

CREATE TABLE locks (
    repo       TEXT NOT NULL,
    unit       TEXT NOT NULL,
    pr         BIGINT NOT NULL,         -- the pull request holding it
    taken_at   BIGINT NOT NULL,
    PRIMARY KEY (repo, unit)
);
CREATE INDEX locks_by_pr ON locks (repo, pr);
