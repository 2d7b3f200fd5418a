//! cascade's integration tests, in one test binary (as crates.io does): each file
//! `tests/it/<name>.rs` is the module `<name>`, so `cargo test --test it bot_review::`
//! runs the tests of `tests/it/bot_review.rs`. One binary links cascade once, where one
//! binary per file linked it once per file; the helpers in `tests/support/` are one
//! module for all of them.
//!
//! Every test shares this process: none may change what is process-wide (the umask,
//! an rlimit, the current directory, an environment variable, the global metrics
//! recorder, a tracing subscriber) under the others. What must runs in a child process
//! (the real `cascade serve`) or in a binary of its own: `tests/fuzz_replay.rs` caps its
//! own address space. [`layout`] keeps a new file from becoming a binary of its own, or
//! from not being run at all, by accident.

#[path = "../support/mod.rs"]
mod support;

mod affected_props;
mod apply_retries;
mod bot_base_rules;
mod bot_destroy;
mod bot_drift;
mod bot_expiry;
mod bot_failures;
mod bot_inert;
mod bot_lifecycle;
mod bot_merge_gate;
mod bot_merge_queue;
mod bot_on_merge;
mod bot_origin;
mod bot_paths;
mod bot_policies;
mod bot_recovery;
mod bot_remote_sources;
mod bot_replicas;
mod bot_review;
mod bot_sandbox;
mod bot_scenarios;
mod bot_spelling;
mod bot_state_commands;
mod bot_subset;
mod bot_unit_env;
mod bot_workflows;
mod catalog_server;
mod check_text;
mod cli;
mod cli_expiry;
mod cli_paths;
mod cli_plan_failures;
mod cli_policies;
mod cli_policy_test;
mod cli_progress;
mod cli_repo;
mod cli_sandbox;
mod cli_unresolved;
mod comment_diffs;
mod comment_inert;
mod comment_layout;
mod comment_render;
mod config_errors;
mod discovery_errors;
mod discovery_fidelity;
mod discovery_hostile;
mod discovery_paths;
mod discovery_remote;
mod discovery_stacks;
mod discovery_unknowns;
mod drift;
mod engine_expiry;
mod engine_policies;
mod engine_rules;
mod exec_init;
mod exec_process;
mod exec_steps;
mod git_diff;
mod github_client;
mod gitlab_client;
mod gitlab_failures;
mod gitlab_inert;
mod gitlab_on_merge;
mod gitlab_policies;
mod gitlab_scenarios;
mod graph_props;
mod inert_markdown;
mod layers;
mod layout;
mod plan_apply_e2e;
mod plan_fingerprint;
mod plan_render;
mod plan_render_oracle;
mod plan_retries;
mod platctl_hooks;
mod policy_examples;
mod policy_input;
mod private_data;
mod sandbox;
mod server_database_loss;
mod server_gitlab;
mod server_hostile;
mod server_status;
mod setup_browser;
mod setup_flow;
mod store_contract;
mod tg_fixtures;
mod unit_env_e2e;
mod unit_file_names;
mod walk_rules;
mod walk_unresolved;
mod webhook_events;
mod workflow_resume;
mod workspace;
mod worlds;
