//! cascade: a GitOps pull-request bot for Terragrunt / OpenTofu / Terraform monorepos.
//!
//! The modules follow the data: a webhook (`server`, `event`) or a command
//! (`command`) becomes pull request work (`bot`); the repository (`workspace`,
//! `git`) is discovered (`config`, `terragrunt`, `scan`) into a `graph`; a change
//! maps onto `affected` units; the `engine` walks them (`walk`) through the
//! `exec` seam, summarises each plan (`plan`), persists everything (`store`) and
//! renders the `comment` posted through `forge::github`. What it keeps on disk
//! and in memory is kept from other local users (`private_dir`). See
//! docs/ARCHITECTURE.md (the map) and docs/design/ (one file per subsystem).

pub mod affected;
pub mod backoff;
pub mod bot;
pub mod catalog;
pub mod cli;
pub mod clock;
pub mod command;
pub mod comment;
pub mod config;
pub mod discovery;
pub mod drift;
pub mod engine;
pub mod event;
pub mod exec;
pub mod forge;
pub mod git;
pub mod git_process;
pub mod graph;
pub mod inert;
pub mod plan;
pub mod policy;
pub mod private_dir;
pub mod problem;
pub mod redact;
pub mod scan;
pub mod server;
pub mod store;
pub mod terragrunt;
pub mod unit;
pub mod walk;
pub mod workspace;
