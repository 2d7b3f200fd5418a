# Settings shared by every environment's `app` unit. Units include this file
# with `expose = true` and read its locals as include.envcommon.locals.*.

locals {
  env_vars = read_terragrunt_config(find_in_parent_folders("env.hcl"))
  env      = local.env_vars.locals.environment

  # The local module every app uses; `//` marks the module root inside modules/.
  module_source = "${dirname(find_in_parent_folders("root.hcl"))}/modules//service"
}

terraform {
  source = local.module_source
}

# Declared here, resolved against the including unit's directory.
dependency "network" {
  config_path = "../network"
  mock_outputs = {
    vpc_id = "vpc-mock"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  name   = "app"
  vpc_id = dependency.network.outputs.vpc_id
}
