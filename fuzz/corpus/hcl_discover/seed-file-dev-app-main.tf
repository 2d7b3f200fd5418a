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

# Outputs of ../database, once it has been applied. Until then the
# fallbacks stand in, like mock_outputs in terragrunt.hcl.
data "terraform_remote_state" "database" {
  count   = fileexists("${path.module}/../database/terraform.tfstate") ? 1 : 0
  backend = "local"
  config = {
    path = "${path.module}/../database/terraform.tfstate"
  }
}

locals {
  database = merge(
    {
      endpoint = "db.mock:5432"
    },
    try(data.terraform_remote_state.database[0].outputs, {}),
  )
}

module "service" {
  source      = "../../modules/service"
  name        = "app"
  environment = var.environment
  vpc_id      = local.network.vpc_id
  settings = {
    database = local.database.endpoint
    replicas = "1"
    label    = "${var.environment}-app"
  }
}

output "full_name" {
  value = module.service.full_name
}

output "url" {
  value = module.service.url
}
