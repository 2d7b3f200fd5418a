-- Each unit's plan as the comment shows it: the text plan::render::RenderedPlan made
-- from `show -json` (masked, redacted and bounded; JSON {text, cut_lines}), so a resumed
-- run and a restarted server show it again. The plan JSON itself is never stored.
-- (0005, not 0004: 0004 is taken on another branch.)
ALTER TABLE unit_results ADD COLUMN rendered TEXT;
