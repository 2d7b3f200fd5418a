-- PostgreSQL twin of migrations/0008_unit_retries.sql: retries survive a restart.
ALTER TABLE unit_results ADD COLUMN retried BIGINT NOT NULL DEFAULT 0;
ALTER TABLE unit_results ADD COLUMN retry_at BIGINT;    -- seconds since the epoch; NULL unless waiting
