# Account-wide settings, read by root.hcl through find_in_parent_folders("account.hcl").
locals {
  account_name = "nonprod"
  account_id   = "111111111111"
}
