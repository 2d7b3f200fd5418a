# Naming convention shared by every service. Called from modules/service.

variable "environment" {
  type = string
}

variable "component" {
  type = string
}

locals {
  full_name = lower("${var.environment}-${var.component}")
}

output "full_name" {
  value = local.full_name
}
