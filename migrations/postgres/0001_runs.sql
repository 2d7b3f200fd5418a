-- PostgreSQL twin of migrations/0001_runs.sql: plans a reviewer can approve, and the runs
-- (plan or apply) that made or used them. Same tables and columns; integers are BIGINT
-- (Rust's i64), JSON is kept as TEXT (jsonb refuses the \u0000 escape serde_json writes),
-- and `seq` stands in for SQLite's rowid where rows are ordered by insertion.
CREATE TABLE plans (
    id          TEXT NOT NULL,
    repo        TEXT NOT NULL,
    head        TEXT NOT NULL,
    base        TEXT NOT NULL,
    status      TEXT NOT NULL,          -- current | superseded | consumed
    run_id      TEXT NOT NULL,
    units       TEXT NOT NULL,          -- JSON: the planned units, their waves, edges and summaries
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (repo, id)
);
CREATE INDEX plans_current ON plans (repo, status);

CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    repo        TEXT NOT NULL,
    kind        TEXT NOT NULL,          -- plan | apply
    key         TEXT NOT NULL,          -- what a resumed run must match: head/base/units, or the plan id
    dir         TEXT NOT NULL,          -- the run's private directory (plan files, logs)
    status      TEXT NOT NULL,          -- running | finished
    created_at  BIGINT NOT NULL,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY  -- insertion order: the newest of equal created_at
);
CREATE INDEX runs_unfinished ON runs (repo, kind, key, status);

CREATE TABLE unit_results (
    run_id      TEXT NOT NULL REFERENCES runs (id),
    unit        TEXT NOT NULL,
    status      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    summary     TEXT,                   -- JSON PlanSummary (counts, labels, fingerprint; never values)
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (run_id, unit)
);
