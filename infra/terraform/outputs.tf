output "bootstrap_servers" {
  description = "Kafka bootstrap address: the load balancer's name and the Kafka port."
  value       = "${aws_lb.bootstrap.dns_name}:${var.ports.kafka}"
}

output "broker_addresses" {
  description = "Each broker's advertised Kafka host:port, by node id."
  value       = { for id, host in local.advertised_host : id => "${host}:${var.ports.kafka}" }
}

output "admin_addresses" {
  description = "Each broker's admin address (metrics, health, strata cluster status), by node id."
  value       = { for id, host in local.advertised_host : id => "${host}:${var.ports.admin}" }
}

output "bucket" {
  description = "The tiered-storage bucket's name and ARN, and the URL the brokers use (--bucket)."
  value = {
    name = aws_s3_bucket.tiered.id
    arn  = aws_s3_bucket.tiered.arn
    url  = "s3://${local.bucket_name}/${var.bucket_prefix}?region=${local.region}&sse=aws:kms"
  }
}

output "role" {
  description = "The brokers' IAM role (name and ARN) and instance profile."
  value = {
    name             = aws_iam_role.broker.name
    arn              = aws_iam_role.broker.arn
    instance_profile = aws_iam_instance_profile.broker.name
  }
}

output "security_group_id" {
  description = "The brokers' security group: add rules to it for more client networks."
  value       = aws_security_group.broker.id
}

output "brokers" {
  description = "Each broker's instance id, availability zone and Raft volume, by node id."
  value = {
    for id, b in local.brokers : id => {
      instance_id       = aws_instance.broker[id].id
      availability_zone = b.availability_zone
      meta_volume_id    = aws_ebs_volume.meta[id].id
      voter             = b.voter
    }
  }
}
