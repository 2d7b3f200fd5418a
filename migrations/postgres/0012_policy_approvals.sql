-- PostgreSQL twin of migrations/0012_policy_approvals.sql: policy approvals by plan id.
CREATE TABLE policy_approvals (
    plan_key    TEXT NOT NULL,
    plan_id     TEXT NOT NULL,
    policy_set  TEXT NOT NULL,
    login       TEXT NOT NULL,
    approved_at BIGINT NOT NULL,
    PRIMARY KEY (plan_key, plan_id, policy_set, login)
);

ALTER TABLE unit_results ADD COLUMN policies TEXT;
