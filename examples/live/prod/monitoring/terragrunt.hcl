include "root" {
  path = find_in_parent_folders("root.hcl")
}

terraform {
  source = "../../modules//service"
}

dependencies {
  paths = ["../app", "../database"]
}

# Cross-environment edge: prod monitoring federates the dev monitoring
# instance, so dev/monitoring is applied first.
dependency "dev_monitoring" {
  config_path = "../../dev/monitoring"
  mock_outputs = {
    url = "https://dev-monitoring.mock"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  name = "monitoring"
  settings = {
    retention_days = "90"
    federate_from  = dependency.dev_monitoring.outputs.url
  }
}
