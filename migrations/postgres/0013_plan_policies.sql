-- PostgreSQL twin of migrations/0013_plan_policies.sql: whole-plan policy findings.
ALTER TABLE plans ADD COLUMN policies TEXT;
