# A generic service. Only the built-in terraform_data resource, so it plans
# and applies without downloading any provider.

variable "name" {
  type = string
}

variable "environment" {
  type = string
}

variable "vpc_id" {
  type    = string
  default = ""
}

variable "settings" {
  type    = map(string)
  default = {}
}

# A nested local module: a change to modules/naming re-plans every unit that
# uses this module.
module "naming" {
  source      = "../naming"
  environment = var.environment
  component   = var.name
}

resource "terraform_data" "service" {
  input = merge(var.settings, {
    name   = module.naming.full_name
    vpc_id = var.vpc_id
  })
}

output "full_name" {
  value = module.naming.full_name
}

output "url" {
  value = "https://${module.naming.full_name}.example.test"
}
