-- What the policy sets that ask for the whole plan (`input: plan`) found in it (JSON list
-- of PolicyResult); NULL: none. Each unit's own findings stay in `units`.
ALTER TABLE plans ADD COLUMN policies TEXT;
