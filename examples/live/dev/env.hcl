# Environment-wide settings, read by root.hcl and _envcommon/*.hcl.
locals {
  environment = "dev"
}
