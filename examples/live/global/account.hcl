# Account-wide settings, read by root.hcl through find_in_parent_folders("account.hcl").
locals {
  account_name = "shared"
  account_id   = "333333333333"
}
