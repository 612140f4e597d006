# A production-shaped strata cluster: six brokers over three zones of
# eu-west-1, TLS and SCRAM on, secrets in Secrets Manager (created and
# filled outside Terraform, so no secret is in the state).
#
#   tofu init && tofu apply -var-file=prod.tfvars

terraform {
  required_version = ">= 1.8.0"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 6.0"
    }
  }
}

variable "region" {
  description = "AWS region of the cluster."
  type        = string
  default     = "eu-west-1"
}

variable "vpc_id" {
  description = "VPC of the cluster."
  type        = string
  default     = "vpc-0a1b2c3d4e5f60718"
}

variable "subnets" {
  description = "One private subnet per zone."
  type = list(object({
    id                = string
    availability_zone = string
  }))
  default = [
    { id = "subnet-0aaaaaaaaaaaaaaa1", availability_zone = "eu-west-1a" },
    { id = "subnet-0bbbbbbbbbbbbbbb2", availability_zone = "eu-west-1b" },
    { id = "subnet-0ccccccccccccccc3", availability_zone = "eu-west-1c" },
  ]
}

variable "ami_id" {
  description = "Amazon Linux 2023 for x86_64 in the region."
  type        = string
  default     = "ami-0a1b2c3d4e5f60718"
}

variable "kms_key_arn" {
  description = "KMS key of the bucket."
  type        = string
  default     = "arn:aws:kms:eu-west-1:123456789012:key/0b1c2d3e-0000-4000-8000-000000000001"
}

variable "secrets_prefix" {
  description = "ARN prefix of the cluster's secrets in Secrets Manager."
  type        = string
  default     = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:strata/orders"
}

provider "aws" {
  region = var.region
}

module "strata" {
  source = "../.."

  name             = "orders"
  broker_count     = 6
  instance_type    = "i4i.xlarge"
  ami_id           = var.ami_id
  vpc_id           = var.vpc_id
  subnets          = var.subnets
  strata_version   = "v0.4.0"
  release_url_base = "https://releases.example.com/strata"

  kms_key_arn   = var.kms_key_arn
  bucket_prefix = "prod"

  client_cidrs     = ["10.0.0.0/8"]
  monitoring_cidrs = ["10.99.0.0/24"]

  tls_keystore_secret_arn               = "${var.secrets_prefix}/broker-pem"
  tls_truststore_secret_arn             = "${var.secrets_prefix}/ca-pem"
  sasl_inter_broker_password_secret_arn = "${var.secrets_prefix}/broker-password"
  admin_token_secret_arn                = "${var.secrets_prefix}/admin-token"

  extra_config = {
    "num.partitions"             = "6"
    "default.replication.factor" = "3"
  }

  tags = { team = "platform", env = "prod" }
}

output "bootstrap_servers" {
  description = "Give this to clients (with the CA and a SCRAM user)."
  value       = module.strata.bootstrap_servers
}

output "brokers" {
  description = "Each broker's advertised address."
  value       = module.strata.broker_addresses
}

output "bucket" {
  description = "The tiered-storage bucket."
  value       = module.strata.bucket
}

output "role" {
  description = "The brokers' role."
  value       = module.strata.role
}
