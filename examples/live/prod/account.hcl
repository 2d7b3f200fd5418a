# Account-wide settings, read by root.hcl through find_in_parent_folders("account.hcl").
locals {
  account_name = "prod"
  account_id   = "222222222222"
}
