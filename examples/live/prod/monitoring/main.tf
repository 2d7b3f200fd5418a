terraform {
  backend "local" {}
}

variable "environment" {
  type    = string
  default = "prod"
}

# Outputs of ../../dev/monitoring, once it has been applied. Until then the
# fallbacks stand in, like mock_outputs in terragrunt.hcl.
data "terraform_remote_state" "dev_monitoring" {
  count   = fileexists("${path.module}/../../dev/monitoring/terraform.tfstate") ? 1 : 0
  backend = "local"
  config = {
    path = "${path.module}/../../dev/monitoring/terraform.tfstate"
  }
}

locals {
  dev_monitoring = merge(
    {
      url = "https://dev-monitoring.mock"
    },
    try(data.terraform_remote_state.dev_monitoring[0].outputs, {}),
  )
}

module "service" {
  source      = "../../modules/service"
  name        = "monitoring"
  environment = var.environment
  settings = {
    retention_days = "90"
    federate_from  = local.dev_monitoring.url
  }
}

output "full_name" {
  value = module.service.full_name
}

output "url" {
  value = module.service.url
}
