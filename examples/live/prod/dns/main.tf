terraform {
  backend "local" {}
}

variable "environment" {
  type    = string
  default = "prod"
}

# Outputs of ../../global/dns, once it has been applied. Until then the
# fallbacks stand in, like mock_outputs in terragrunt.hcl.
data "terraform_remote_state" "zone" {
  count   = fileexists("${path.module}/../../global/dns/terraform.tfstate") ? 1 : 0
  backend = "local"
  config = {
    path = "${path.module}/../../global/dns/terraform.tfstate"
  }
}

locals {
  zone = merge(
    {
      zone_id   = "zone-mock"
      zone_name = "example.test"
    },
    try(data.terraform_remote_state.zone[0].outputs, {}),
  )
}

# Outputs of ../app, once it has been applied. Until then the
# fallbacks stand in, like mock_outputs in terragrunt.hcl.
data "terraform_remote_state" "app" {
  count   = fileexists("${path.module}/../app/terraform.tfstate") ? 1 : 0
  backend = "local"
  config = {
    path = "${path.module}/../app/terraform.tfstate"
  }
}

locals {
  app = merge(
    {
      url = "https://app.mock"
    },
    try(data.terraform_remote_state.app[0].outputs, {}),
  )
}

resource "terraform_data" "record" {
  input = {
    zone_id = local.zone.zone_id
    name    = "app.${var.environment}.${local.zone.zone_name}"
    target  = local.app.url
  }
}

output "fqdn" {
  value = terraform_data.record.output.name
}
