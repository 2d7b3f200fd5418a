-- Workflow steps: each unit's `run` steps and how they ended (JSON list of
-- StepRecord), so the comment can show their output and a resumed run does not
-- run a finished post_apply step again. NULL: the unit ran no step.
ALTER TABLE unit_results ADD COLUMN steps TEXT;
