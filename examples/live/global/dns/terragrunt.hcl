# The DNS zone shared by every environment. dev/dns and prod/dns depend on it.
include "root" {
  path = find_in_parent_folders("root.hcl")
}

inputs = {
  zone_name = "example.test"
}
