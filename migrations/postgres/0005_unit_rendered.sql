-- PostgreSQL twin of migrations/0005_unit_rendered.sql. Each unit's plan as the comment
-- shows it (masked, redacted and bounded; JSON {text, cut_lines}), so a resumed run and a
-- restarted server show it again. The plan JSON itself is never stored.
ALTER TABLE unit_results ADD COLUMN rendered TEXT;
