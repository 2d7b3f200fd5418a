-- PostgreSQL twin of migrations/0007_replicas.sql: delivery claims and pull
-- request leases, so replicas on one database never do one piece of work twice.
ALTER TABLE deliveries ADD COLUMN owner TEXT;               -- the replica processing it
ALTER TABLE deliveries ADD COLUMN claimed_until BIGINT;     -- seconds since the epoch
CREATE INDEX deliveries_owner ON deliveries (owner) WHERE status = 'received';

CREATE TABLE pr_leases (
    repo        TEXT NOT NULL,
    number      BIGINT NOT NULL,
    owner       TEXT NOT NULL,        -- the replica running one of its jobs
    expires_at  BIGINT NOT NULL,      -- seconds since the epoch; renewed while it runs
    superseded  BIGINT NOT NULL DEFAULT 0,  -- 1: another replica got a newer head
    PRIMARY KEY (repo, number)
);
