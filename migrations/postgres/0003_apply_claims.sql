-- PostgreSQL twin of migrations/0003_apply_claims.sql. Who is applying a plan right
-- now: at most one process per plan id. A claim is taken atomically before an apply,
-- heartbeated while it runs and deleted at the end; a claim whose owner is dead (same
-- host and its pid gone, or a heartbeat older than the lease) may be taken over.
CREATE TABLE apply_claims (
    repo          TEXT NOT NULL,
    plan_id       TEXT NOT NULL,
    owner         TEXT NOT NULL,        -- a fresh id per apply (two applies of one process differ)
    pid           BIGINT NOT NULL,      -- the owning cascade process
    host          TEXT NOT NULL,        -- the host it runs on
    heartbeat_at  BIGINT NOT NULL,      -- seconds since the epoch
    PRIMARY KEY (repo, plan_id)
);
