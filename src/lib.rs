//! cascade: a GitOps pull-request bot for Terragrunt / OpenTofu / Terraform monorepos.
//!
//! The modules follow the data: `config` (the repo's `.cascade.yaml`) and
//! `terragrunt` (discovery) feed `graph` (edges, waves, cycles); `git` turns a
//! revision range into changed files and `affected` maps those onto the graph.
//! See docs/ARCHITECTURE.md.

pub mod affected;
pub mod bot;
pub mod cli;
pub mod command;
pub mod comment;
pub mod config;
pub mod engine;
pub mod event;
pub mod exec;
pub mod forge;
pub mod git;
pub mod graph;
pub mod plan;
pub mod problem;
pub mod scan;
pub mod server;
pub mod store;
pub mod terragrunt;
pub mod unit;
pub mod walk;
pub mod workspace;
