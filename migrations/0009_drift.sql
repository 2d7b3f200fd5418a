-- Drift detection: one row per repository the server knows (an installation's
-- repositories, and every repository a pull request came from), saying when to
-- look at its default branch next. A replica running a repository's drift claims
-- the row (like a delivery), so a schedule fires once across replicas.
CREATE TABLE drift_schedules (
    repo           TEXT PRIMARY KEY,   -- the store's repository key
    forge_id       INTEGER NOT NULL,   -- the GitHub installation id, or the GitLab project id
    next_at        INTEGER NOT NULL,   -- seconds since the epoch
    owner          TEXT,               -- the replica running it now
    claimed_until  INTEGER,
    last_run_at    INTEGER,            -- when the last drift run ended
    issue_number   INTEGER,            -- the repository's drift issue
    drifted        INTEGER NOT NULL DEFAULT 0  -- units drifted at the last run
);
CREATE INDEX drift_schedules_due ON drift_schedules (next_at);
