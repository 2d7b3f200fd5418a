include "root" {
  path = find_in_parent_folders("root.hcl")
}

dependency "app" {
  config_path = "../app"
  mock_outputs = {
    url = "https://app.mock"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

# Cross-environment edge to the shared zone, as a relative path.
dependency "zone" {
  config_path = "../../global/dns"
  mock_outputs = {
    zone_id   = "zone-mock"
    zone_name = "example.test"
  }
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}

inputs = {
  zone_id = dependency.zone.outputs.zone_id
  target  = dependency.app.outputs.url
}
