# Planned directly by terraform (see ../../README.md): inputs become defaults.
terraform {
  backend "local" {}
}

variable "environment" {
  type    = string
  default = "global"
}

variable "zone_name" {
  type    = string
  default = "example.test"
}

resource "terraform_data" "zone" {
  input = {
    name        = var.zone_name
    environment = var.environment
  }
}

output "zone_name" {
  value = var.zone_name
}

output "zone_id" {
  value = "zone-${substr(sha1(var.zone_name), 0, 8)}"
}
