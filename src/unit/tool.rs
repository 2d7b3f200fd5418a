//! Which binary runs a unit: terragrunt, tofu or terraform.
//!
//! Plain data at the bottom of the crate: `.cascade.yaml` names it (`executor:`), discovery
//! attaches it to units, the engine and the executor run it, and plan records store it
//! (its serde names are in stored plans: they never change). It never runs anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which binary runs a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
// The name `.cascade.yaml`'s published schema has always given it (`executor:`).
#[schemars(rename = "Executor")]
pub enum Tool {
    /// Terragrunt; the default for units with a `terragrunt.hcl`.
    Terragrunt,
    /// OpenTofu (`tofu`).
    Tofu,
    /// HashiCorp Terraform; the default for `modules`.
    Terraform,
}
