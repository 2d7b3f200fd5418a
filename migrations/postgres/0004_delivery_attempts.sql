-- PostgreSQL twin of migrations/0004_delivery_attempts.sql. How many times processing
-- of a delivery was started, counted before the work begins, so a process that dies
-- while handling a delivery still counts; a delivery that used up its attempts is
-- marked failed, not resumed.
ALTER TABLE deliveries ADD COLUMN attempts BIGINT NOT NULL DEFAULT 0;
