variable "name" {
  description = "Name of the cluster: prefixes every resource and tag, and names the bucket unless bucket_name is set."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}[a-z0-9]$", var.name))
    error_message = "name must be 3-32 characters of lower-case letters, digits and hyphens, starting with a letter."
  }
}

variable "broker_count" {
  description = "Number of brokers. The first three (node ids 1-3) are the metadata (Raft) voters; brokers are spread round-robin over the subnets' availability zones."
  type        = number
  default     = 3

  validation {
    condition     = var.broker_count >= 3 && var.broker_count <= 60 && floor(var.broker_count) == var.broker_count
    error_message = "broker_count must be a whole number from 3 to 60: three voters are needed to survive the loss of one zone."
  }
}

variable "vpc_id" {
  description = "VPC the brokers, their security group and the load balancer live in."
  type        = string

  validation {
    condition     = can(regex("^vpc-[0-9a-f]+$", var.vpc_id))
    error_message = "vpc_id must look like vpc-0123456789abcdef0."
  }
}

variable "subnets" {
  description = "Private subnets for the brokers and the load balancer, one per availability zone, at least three zones. availability_zone is given (not looked up) so that the plan knows each broker's zone, which becomes its broker.rack."
  type = list(object({
    id                = string
    availability_zone = string
  }))

  validation {
    condition     = length(var.subnets) >= 3 && length(distinct([for s in var.subnets : s.availability_zone])) == length(var.subnets)
    error_message = "subnets must name at least three subnets, each in a different availability zone."
  }

  validation {
    condition     = alltrue([for s in var.subnets : can(regex("^subnet-[0-9a-f]+$", s.id))])
    error_message = "each subnet id must look like subnet-0123456789abcdef0."
  }
}

variable "instance_type" {
  description = "EC2 instance type of the brokers. It must have local NVMe instance storage (i4i, im4gn, is4gen, i3en, m6id, r6id, c6id, ...): the hot tail of every partition lives there."
  type        = string
  default     = "i4i.xlarge"

  validation {
    condition     = can(regex("^(i[0-9][a-z]*|im[0-9][a-z]*|is[0-9][a-z]*|[cmrxz][0-9][a-z]*d[a-z]*)\\.[0-9a-z]+$", var.instance_type))
    error_message = "instance_type must be a family with local NVMe instance storage (its name has a 'd', or is an i/im/is family), such as i4i.xlarge or m6id.large."
  }
}

variable "ami_id" {
  description = "AMI of the brokers: a systemd Linux (Amazon Linux 2023 or Debian/Ubuntu) with the AWS CLI, for the architecture of instance_type."
  type        = string

  validation {
    condition     = can(regex("^ami-[0-9a-f]+$", var.ami_id))
    error_message = "ami_id must look like ami-0123456789abcdef0."
  }
}

variable "strata_version" {
  description = "strata release the brokers install, such as v0.4.0 (from release_url_base)."
  type        = string

  validation {
    condition     = can(regex("^v[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.]+)?$", var.strata_version))
    error_message = "strata_version must be a release tag such as v0.4.0."
  }
}

variable "release_url_base" {
  description = "Where releases are downloaded from: the instance fetches <base>/<version>/strata-<version>-linux-<arch> and <base>/<version>/SHA256SUMS (as `make release` writes them to dist/) and refuses a binary whose checksum differs. An s3:// URL is read with the instance role (grant it with release_bucket_arn)."
  type        = string

  validation {
    condition     = can(regex("^(https|s3)://", var.release_url_base))
    error_message = "release_url_base must be an https:// or s3:// URL."
  }
}

variable "release_bucket_arn" {
  description = "ARN of the S3 bucket (or bucket/prefix) holding releases when release_url_base is s3://: the role may read it. Empty when releases come over https."
  type        = string
  default     = ""
}

variable "bucket_name" {
  description = "Name of the tiered-storage bucket this module creates. Empty: \"<name>-tiered\"."
  type        = string
  default     = ""
}

variable "bucket_prefix" {
  description = "Prefix under which the cluster keeps its objects in the bucket; the role may touch nothing else."
  type        = string
  default     = "strata"

  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9_.-]+)*$", var.bucket_prefix))
    error_message = "bucket_prefix must be a relative path without a leading or trailing slash."
  }
}

variable "bucket_versioning" {
  description = "Turn S3 versioning on. Off by default: strata never overwrites an object, and versions would keep every deleted segment (and its cost) until a lifecycle rule expired it."
  type        = bool
  default     = false
}

variable "bucket_force_destroy" {
  description = "Let `tofu destroy` delete a bucket that still holds objects. Keep false in production."
  type        = bool
  default     = false
}

variable "kms_key_arn" {
  description = "ARN of the KMS key that encrypts the bucket (SSE-KMS) and that the brokers' role may use for it."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID)."
  }
}

variable "abort_incomplete_multipart_days" {
  description = "Days after which the bucket aborts a multipart upload that was never completed (a broker that died mid-upload)."
  type        = number
  default     = 2

  validation {
    condition     = var.abort_incomplete_multipart_days >= 1
    error_message = "abort_incomplete_multipart_days must be at least 1."
  }
}

variable "client_cidrs" {
  description = "CIDR blocks allowed to reach the Kafka port (through the load balancer and at each broker's advertised address)."
  type        = list(string)

  validation {
    condition     = length(var.client_cidrs) > 0 && alltrue([for c in var.client_cidrs : can(cidrhost(c, 0))])
    error_message = "client_cidrs must be a non-empty list of CIDR blocks."
  }
}

variable "monitoring_cidrs" {
  description = "CIDR blocks of monitoring and operators, allowed to the admin port (metrics, health, strata cluster status). Never 0.0.0.0/0."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for c in var.monitoring_cidrs : can(cidrhost(c, 0)) && !endswith(c, "/0")])
    error_message = "monitoring_cidrs must be CIDR blocks, none of them /0."
  }
}

variable "ports" {
  description = "Ports: kafka (clients, SASL_SSL), replication (followers fetching from leaders, SASL_SSL), raft (metadata voters, mutual TLS) and admin (HTTPS: /metrics, /healthz, cluster status)."
  type = object({
    kafka       = optional(number, 9092)
    replication = optional(number, 9094)
    raft        = optional(number, 9093)
    admin       = optional(number, 9644)
  })
  default = {}

  validation {
    condition     = length(distinct([var.ports.kafka, var.ports.replication, var.ports.raft, var.ports.admin])) == 4
    error_message = "the four ports must differ."
  }
}

variable "tls_enabled" {
  description = "Serve TLS on every listener and mutual TLS between voters. On by default; turn off only on a private test network."
  type        = bool
  default     = true
}

variable "sasl_enabled" {
  description = "Require SASL (SCRAM) logins on the Kafka listeners, the followers logging in as sasl_inter_broker_username. On by default."
  type        = bool
  default     = true
}

variable "tls_keystore_secret_arn" {
  description = "Secrets Manager secret holding the brokers' PEM private key and certificate chain (SANs: every broker's advertised host and the load balancer's name). Read at boot by the instance: never in the state."
  type        = string
  default     = ""
}

variable "tls_truststore_secret_arn" {
  description = "Secrets Manager secret holding the PEM CA certificates that brokers' certificates chain to."
  type        = string
  default     = ""
}

variable "sasl_inter_broker_username" {
  description = "The user the brokers' followers log in as; a super user."
  type        = string
  default     = "broker"
}

variable "sasl_inter_broker_password_secret_arn" {
  description = "Secrets Manager secret holding the inter-broker user's password. Read at boot by the instance: never in the state."
  type        = string
  default     = ""
}

variable "admin_token_secret_arn" {
  description = "Secrets Manager secret holding the bearer token of the admin address. Empty: the admin address takes client certificates only, of principals with Describe on the cluster (reads) or Alter (drain)."
  type        = string
  default     = ""
}

variable "meta_volume_size_gib" {
  description = "Size of each broker's EBS volume for the metadata (Raft) state, in GiB."
  type        = number
  default     = 20

  validation {
    condition     = var.meta_volume_size_gib >= 8
    error_message = "meta_volume_size_gib must be at least 8."
  }
}

variable "root_volume_size_gib" {
  description = "Size of each broker's root volume, in GiB (logs and the binary)."
  type        = number
  default     = 30
}

variable "max_broker_partitions" {
  description = "Most partitions one broker may hold (max.broker.partitions); the systemd unit's LimitNOFILE is sized from it."
  type        = number
  default     = 4000

  validation {
    condition     = var.max_broker_partitions >= 1 && var.max_broker_partitions <= 4000
    error_message = "max_broker_partitions must be from 1 to 4000."
  }
}

variable "stop_timeout_seconds" {
  description = "How long systemd waits, after SIGTERM (which moves the broker's leadership away first), before it kills the broker."
  type        = number
  default     = 120

  validation {
    condition     = var.stop_timeout_seconds >= 30
    error_message = "stop_timeout_seconds must be at least 30: leadership moves and in-flight requests drain first."
  }
}

variable "advertised_domain" {
  description = "DNS domain of a Route 53 zone (route53_zone_id) under which each broker gets b<id>.<domain> as its advertised host. Empty: brokers advertise their fixed private IP addresses."
  type        = string
  default     = ""
}

variable "route53_zone_id" {
  description = "Route 53 hosted zone of advertised_domain."
  type        = string
  default     = ""
}

variable "nlb_internal" {
  description = "Make the bootstrap network load balancer internal (reachable from inside the VPC and peered networks only)."
  type        = bool
  default     = true
}

variable "extra_config" {
  description = "More server settings written to the config file as name = value, names as `strata server -h` lists them (such as num.partitions)."
  type        = map(string)
  default     = {}
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}
