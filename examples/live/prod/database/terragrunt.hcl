include "root" {
  path = find_in_parent_folders("root.hcl")
}

terraform {
  source = "../../modules//service"
}

dependency "network" {
  config_path = "../network"
  mock_outputs = {
    vpc_id = "vpc-mock"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  name   = "database"
  vpc_id = dependency.network.outputs.vpc_id
  settings = {
    engine = "postgres"
    size   = "large"
  }
}
