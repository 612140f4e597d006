# strata on AWS: N brokers over three or more availability zones, tiered to
# one S3 bucket. Files: bucket.tf (the bucket), iam.tf (the brokers' role),
# network.tf (security group, fixed addresses, bootstrap load balancer),
# brokers.tf (instances and their Raft volumes), templates/ (user data,
# config file, systemd unit).

locals {
  # The region is the KMS key's: the bucket and the key must share one.
  region      = split(":", var.kms_key_arn)[3]
  partition   = split(":", var.kms_key_arn)[1]
  bucket_name = var.bucket_name != "" ? var.bucket_name : "${var.name}-tiered"
  bucket_arn  = "arn:${local.partition}:s3:::${local.bucket_name}"
  zones       = [for s in var.subnets : s.availability_zone]

  # Broker i (node id i+1) is in subnet i mod len(subnets): round-robin over
  # the zones, so each zone holds floor or ceil of N/zones brokers and the
  # three voters (ids 1-3) sit in three different zones.
  brokers = {
    for i in range(var.broker_count) : tostring(i + 1) => {
      node_id           = i + 1
      subnet_id         = var.subnets[i % length(var.subnets)].id
      availability_zone = var.subnets[i % length(var.subnets)].availability_zone
      voter             = i < 3
    }
  }

  kafka_protocol = var.sasl_enabled ? (var.tls_enabled ? "SASL_SSL" : "SASL_PLAINTEXT") : (var.tls_enabled ? "SSL" : "PLAINTEXT")

  # Secrets the instances read at boot (never passed through the state).
  secret_arns = compact([
    var.tls_enabled ? var.tls_keystore_secret_arn : "",
    var.tls_enabled ? var.tls_truststore_secret_arn : "",
    var.sasl_enabled ? var.sasl_inter_broker_password_secret_arn : "",
    var.admin_token_secret_arn,
  ])

  tags = merge(var.tags, { "strata:cluster" = var.name })
}
