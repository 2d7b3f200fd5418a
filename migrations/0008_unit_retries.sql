-- Retries survive a restart: how many times a unit's plan or apply was tried
-- again after a transient failure, and when the next try is due while it waits
-- (level-based: a resumed run waits out the rest and keeps counting).
ALTER TABLE unit_results ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE unit_results ADD COLUMN retry_at INTEGER;    -- seconds since the epoch; NULL unless waiting
