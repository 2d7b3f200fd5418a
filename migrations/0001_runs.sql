-- Plans a reviewer can approve, and the runs (plan or apply) that made or used them.
CREATE TABLE plans (
    id          TEXT NOT NULL,
    repo        TEXT NOT NULL,
    head        TEXT NOT NULL,
    base        TEXT NOT NULL,
    status      TEXT NOT NULL,          -- current | superseded | consumed
    run_id      TEXT NOT NULL,
    units       TEXT NOT NULL,          -- JSON: the planned units, their waves, edges and summaries
    created_at  INTEGER NOT NULL,
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
    created_at  INTEGER NOT NULL
);
CREATE INDEX runs_unfinished ON runs (repo, kind, key, status);

CREATE TABLE unit_results (
    run_id      TEXT NOT NULL REFERENCES runs (id),
    unit        TEXT NOT NULL,
    status      TEXT NOT NULL,
    detail      TEXT NOT NULL,
    summary     TEXT,                   -- JSON PlanSummary (counts, labels, fingerprint; never values)
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (run_id, unit)
);
