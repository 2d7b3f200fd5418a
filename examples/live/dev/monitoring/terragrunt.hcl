include "root" {
  path = find_in_parent_folders("root.hcl")
}

terraform {
  source = "../../modules//service"
}

# Ordering-only edges: monitoring reads no outputs, it must just come after
# the things it watches.
dependencies {
  paths = ["../app", "../database"]
}

inputs = {
  name = "monitoring"
  settings = {
    retention_days = "7"
  }
}
