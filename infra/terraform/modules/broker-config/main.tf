# One broker's `strata server --config` file. A module of its own, with no
# provider, so that infra/terraform/config_test.go renders it exactly as the
# brokers get it and loads it with `strata server --config FILE --check`.

variable "node_id" {
  description = "The broker's node id (--node-id)."
  type        = number
}

variable "rack" {
  description = "The broker's availability zone (--broker.rack)."
  type        = string
}

variable "host" {
  description = "The host the broker advertises to clients, followers and voters."
  type        = string
}

variable "ports" {
  description = "kafka, replication, raft and admin ports."
  type = object({
    kafka       = number
    replication = number
    raft        = number
    admin       = number
  })
}

variable "protocol" {
  description = "Security protocol of both Kafka listeners: SASL_SSL, SSL, SASL_PLAINTEXT or PLAINTEXT."
  type        = string

  validation {
    condition     = contains(["SASL_SSL", "SSL", "SASL_PLAINTEXT", "PLAINTEXT"], var.protocol)
    error_message = "protocol must be SASL_SSL, SSL, SASL_PLAINTEXT or PLAINTEXT."
  }
}

variable "meta_peers" {
  description = "The metadata voters as id=host:port,... (--meta-peers)."
  type        = string
}

variable "bucket_url" {
  description = "The tiered-storage URL (--bucket)."
  type        = string
}

variable "sasl_inter_broker_username" {
  description = "The user followers log in as, when the protocol is a SASL one."
  type        = string
  default     = "broker"
}

variable "admin_token" {
  description = "Whether the admin address takes a bearer token from <etc_dir>/admin.token."
  type        = bool
  default     = false
}

variable "max_broker_partitions" {
  description = "max.broker.partitions."
  type        = number
  default     = 4000
}

variable "extra" {
  description = "More name = value settings."
  type        = map(string)
  default     = {}
}

variable "data_dir" {
  description = "The data directory (--data); <data_dir>/meta is the Raft volume."
  type        = string
  default     = "/var/lib/strata/data"
}

variable "etc_dir" {
  description = "Where the user data writes the secrets: tls/broker.pem, tls/ca.pem, sasl/inter-broker.password, admin.token."
  type        = string
  default     = "/etc/strata"
}

output "config" {
  description = "The config file's text."
  value = templatefile("${path.module}/strata.conf.tftpl", {
    node_id                    = var.node_id
    rack                       = var.rack
    data_dir                   = var.data_dir
    host                       = var.host
    ports                      = var.ports
    protocol                   = var.protocol
    tls                        = endswith(var.protocol, "SSL")
    sasl                       = startswith(var.protocol, "SASL_")
    meta_peers                 = var.meta_peers
    bucket_url                 = var.bucket_url
    sasl_inter_broker_username = var.sasl_inter_broker_username
    admin_token                = var.admin_token
    max_broker_partitions      = var.max_broker_partitions
    extra                      = var.extra
    etc                        = var.etc_dir
  })
}
