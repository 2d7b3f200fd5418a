include "root" {
  path = find_in_parent_folders("root.hcl")
}

# terraform.source and the dependency on ../network come from here.
include "envcommon" {
  path   = "${dirname(find_in_parent_folders("root.hcl"))}/_envcommon/app.hcl"
  expose = true
}

dependency "database" {
  config_path = "../database"
  mock_outputs = {
    endpoint = "db.mock:5432"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  settings = {
    database = dependency.database.outputs.endpoint
    replicas = "1"
    label    = "${include.envcommon.locals.env}-app"
  }
}
