-- Several `cascade serve` on one database (PostgreSQL) never do one piece of work
-- twice. Each delivery is claimed by the replica processing it until a time it
-- keeps pushing forward while alive; a claim that ran out belongs to a dead
-- replica and is taken by another. A pull request's jobs run under a lease, so
-- they stay one at a time across replicas. SQLite gets the same tables: one
-- server uses the same code path.
ALTER TABLE deliveries ADD COLUMN owner TEXT;               -- the replica processing it
ALTER TABLE deliveries ADD COLUMN claimed_until INTEGER;    -- seconds since the epoch
CREATE INDEX deliveries_owner ON deliveries (owner) WHERE status = 'received';

CREATE TABLE pr_leases (
    repo        TEXT NOT NULL,
    number      INTEGER NOT NULL,
    owner       TEXT NOT NULL,        -- the replica running one of its jobs
    expires_at  INTEGER NOT NULL,     -- seconds since the epoch; renewed while it runs
    superseded  INTEGER NOT NULL DEFAULT 0,  -- 1: another replica got a newer head
    PRIMARY KEY (repo, number)
);
