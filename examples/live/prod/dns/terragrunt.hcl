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

# Cross-environment edge to the shared zone, addressed from the directory that
# holds root.hcl (the top of this layout) rather than relative to the unit.
dependency "zone" {
  config_path = "${dirname(find_in_parent_folders("root.hcl"))}/global/dns"
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
