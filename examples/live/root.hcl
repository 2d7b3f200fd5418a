# Root configuration. Every unit includes it as `include "root"`.
#
# It is named root.hcl, not terragrunt.hcl, so that it is not itself a unit.
# `find_in_parent_folders` in an included file searches from the including
# unit, so each unit picks up the account.hcl and env.hcl of its own environment.

locals {
  account_vars = read_terragrunt_config(find_in_parent_folders("account.hcl"))
  env_vars     = read_terragrunt_config(find_in_parent_folders("env.hcl"))

  account_name = local.account_vars.locals.account_name
  account_id   = local.account_vars.locals.account_id
  environment  = local.env_vars.locals.environment
}

# State lives next to each unit (terraform.tfstate), which is also where plain
# `terraform` puts it when a unit is planned directly. The units' main.tf files
# declare `backend "local" {}`; Terragrunt passes this path as -backend-config.
remote_state {
  backend = "local"
  config = {
    path = "${get_terragrunt_dir()}/terraform.tfstate"
  }
}

inputs = {
  account_name = local.account_name
  account_id   = local.account_id
  environment  = local.environment
}
