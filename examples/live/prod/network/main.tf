terraform {
  backend "local" {}
}

variable "environment" {
  type    = string
  default = "prod"
}

variable "cidr_block" {
  type    = string
  default = "10.20.0.0/16"
}

resource "terraform_data" "vpc" {
  input = {
    environment = var.environment
    cidr_block  = var.cidr_block
  }
}

output "vpc_id" {
  value = "vpc-${var.environment}-${substr(sha1(var.cidr_block), 0, 8)}"
}

output "cidr_block" {
  value = var.cidr_block
}
