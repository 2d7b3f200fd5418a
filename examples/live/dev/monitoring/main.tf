terraform {
  backend "local" {}
}

variable "environment" {
  type    = string
  default = "dev"
}

module "service" {
  source      = "../../modules/service"
  name        = "monitoring"
  environment = var.environment
  settings = {
    retention_days = "7"
  }
}

output "full_name" {
  value = module.service.full_name
}

output "url" {
  value = module.service.url
}
