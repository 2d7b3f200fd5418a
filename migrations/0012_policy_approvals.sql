-- Policy approvals (`/approve-policies <plan id>`): an owner of a policy set approves
-- its failures for exactly one plan id. A push or a changed fingerprint makes a new id,
-- so an approval never carries over; rows of old ids stay for the record.
CREATE TABLE policy_approvals (
    plan_key    TEXT NOT NULL,     -- PlanKey: owner/name#7, a repository's drift key
    plan_id     TEXT NOT NULL,
    policy_set  TEXT NOT NULL,     -- the set's name in .cascade.yaml `policies:`
    login       TEXT NOT NULL,     -- who approved, as the comment's event spelled it
    approved_at INTEGER NOT NULL,  -- seconds since the epoch
    PRIMARY KEY (plan_key, plan_id, policy_set, login)
);

-- What each policy set found in a unit's plan (JSON list of PolicyResult); NULL: none.
ALTER TABLE unit_results ADD COLUMN policies TEXT;
