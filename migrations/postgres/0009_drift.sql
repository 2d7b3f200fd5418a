-- PostgreSQL twin of migrations/0009_drift.sql: when each repository's default
-- branch is checked for drift next, claimed by one replica at a time.
CREATE TABLE drift_schedules (
    repo           TEXT PRIMARY KEY,
    forge_id       BIGINT NOT NULL,
    next_at        BIGINT NOT NULL,
    owner          TEXT,
    claimed_until  BIGINT,
    last_run_at    BIGINT,
    issue_number   BIGINT,
    drifted        BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX drift_schedules_due ON drift_schedules (next_at);
