-- PostgreSQL twin of migrations/0011_unit_steps.sql: each unit's workflow steps.
ALTER TABLE unit_results ADD COLUMN steps TEXT;
