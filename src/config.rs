//! (being written) The repo configuration, `.cascade.yaml`.

/// Which binary runs a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    Terragrunt,
    Tofu,
    Terraform,
}

#[derive(Clone, Debug, Default)]
pub struct RepoConfig {}
