# The same module Terragrunt would use (terraform.source), called directly so
# that plain terraform can plan this unit.
terraform {
  backend "local" {}
}

variable "environment" {
  type    = string
  default = "dev"
}

# Outputs of ../network, once it has been applied. Until then the
# fallbacks stand in, like mock_outputs in terragrunt.hcl.
data "terraform_remote_state" "network" {
  count   = fileexists("${path.module}/../network/terraform.tfstate") ? 1 : 0
  backend = "local"
  config = {
    path = "${path.module}/../network/terraform.tfstate"
  }
}

locals {
  network = merge(
    {
      vpc_id = "vpc-mock"
    },
    try(data.terraform_remote_state.network[0].outputs, {}),
  )
}

module "service" {
  source      = "../../modules/service"
  name        = "database"
  environment = var.environment
  vpc_id      = local.network.vpc_id
  settings = {
    engine = "postgres"
    size   = "small"
  }
}

output "full_name" {
  value = module.service.full_name
}

output "endpoint" {
  value = "${module.service.full_name}.db.internal:5432"
}
