# Offline checks of the module: the AWS provider is mocked (no API is
# called); the stand-in provider from ./standin only serves its schema.
# Run with `make tofu-test`.

mock_provider "aws" {}

variables {
  name          = "orders"
  vpc_id        = "vpc-0a1b2c3d4e5f60718"
  ami_id        = "ami-0a1b2c3d4e5f60718"
  instance_type = "i4i.xlarge"
  subnets = [
    { id = "subnet-0aaaaaaaaaaaaaaa1", availability_zone = "eu-west-1a" },
    { id = "subnet-0bbbbbbbbbbbbbbb2", availability_zone = "eu-west-1b" },
    { id = "subnet-0ccccccccccccccc3", availability_zone = "eu-west-1c" },
  ]
  strata_version                        = "v0.4.0"
  release_url_base                      = "https://releases.example.com/strata"
  kms_key_arn                           = "arn:aws:kms:eu-west-1:123456789012:key/0b1c2d3e-0000-4000-8000-000000000001"
  client_cidrs                          = ["10.20.0.0/16"]
  monitoring_cidrs                      = ["10.99.0.0/24"]
  tls_keystore_secret_arn               = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders/broker-pem-AbCdEf"
  tls_truststore_secret_arn             = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders/ca-pem-AbCdEf"
  sasl_inter_broker_password_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders/broker-password-AbCdEf"
}

run "three_zones_by_default" {
  command = apply

  assert {
    condition     = length(aws_instance.broker) == 3 && length(aws_ebs_volume.meta) == 3 && length(aws_network_interface.broker) == 3
    error_message = "three brokers, three Raft volumes, three addresses by default"
  }
  assert {
    condition     = length(distinct([for b in aws_instance.broker : b.availability_zone])) == 3
    error_message = "the brokers must sit in three availability zones"
  }
  assert {
    condition     = alltrue([for id, v in aws_ebs_volume.meta : v.availability_zone == aws_instance.broker[id].availability_zone])
    error_message = "each Raft volume must be in its broker's zone"
  }
  assert {
    condition     = length(distinct([for id, b in output.brokers : b.availability_zone if b.voter])) == 3
    error_message = "the three metadata voters must be in three zones"
  }
  assert {
    condition     = alltrue([for i in aws_instance.broker : i.instance_type == "i4i.xlarge"])
    error_message = "instance_type must reach the instances"
  }
}

run "counts_follow_broker_count" {
  command = apply

  variables {
    broker_count = 7
  }

  assert {
    condition     = length(aws_instance.broker) == 7 && length(aws_ebs_volume.meta) == 7 && length(aws_volume_attachment.meta) == 7 && length(aws_lb_target_group_attachment.kafka) == 7 && length(aws_network_interface.broker) == 7
    error_message = "every per-broker resource must number broker_count"
  }
  assert {
    condition     = [for z in ["eu-west-1a", "eu-west-1b", "eu-west-1c"] : length([for i in aws_instance.broker : i if i.availability_zone == z])] == [3, 2, 2]
    error_message = "seven brokers spread 3/2/2 over the zones"
  }
  assert {
    condition     = length([for b in output.brokers : b if b.voter]) == 3
    error_message = "three voters whatever the broker count"
  }
}

run "too_few_brokers_refused" {
  command = plan

  variables {
    broker_count = 2
  }

  expect_failures = [var.broker_count]
}

run "two_zones_refused" {
  command = plan

  variables {
    subnets = [
      { id = "subnet-0aaaaaaaaaaaaaaa1", availability_zone = "eu-west-1a" },
      { id = "subnet-0bbbbbbbbbbbbbbb2", availability_zone = "eu-west-1b" },
    ]
  }

  expect_failures = [var.subnets]
}

run "bucket_private_encrypted_no_versioning" {
  command = apply

  assert {
    condition = (aws_s3_bucket_public_access_block.tiered.block_public_acls && aws_s3_bucket_public_access_block.tiered.block_public_policy
    && aws_s3_bucket_public_access_block.tiered.ignore_public_acls && aws_s3_bucket_public_access_block.tiered.restrict_public_buckets)
    error_message = "every public access block must be on"
  }
  assert {
    condition     = one(one(aws_s3_bucket_server_side_encryption_configuration.tiered.rule).apply_server_side_encryption_by_default).sse_algorithm == "aws:kms"
    error_message = "the bucket must default to SSE-KMS"
  }
  assert {
    condition     = one(one(aws_s3_bucket_server_side_encryption_configuration.tiered.rule).apply_server_side_encryption_by_default).kms_master_key_id == var.kms_key_arn
    error_message = "the bucket must use the given key"
  }
  assert {
    condition     = one([for r in aws_s3_bucket_lifecycle_configuration.tiered.rule : one(r.abort_incomplete_multipart_upload).days_after_initiation if r.status == "Enabled"]) == 2
    error_message = "a lifecycle rule must abort multipart uploads after 2 days"
  }
  assert {
    condition     = length(aws_s3_bucket_versioning.tiered) == 0
    error_message = "no versioning unless asked"
  }
  assert {
    condition     = alltrue([for v in aws_ebs_volume.meta : v.encrypted]) && alltrue([for i in aws_instance.broker : one(i.root_block_device).encrypted])
    error_message = "every EBS volume must be encrypted"
  }
  assert {
    condition     = strcontains(jsondecode(aws_s3_bucket_policy.tiered.policy).Statement[0].Condition.Bool["aws:SecureTransport"], "false")
    error_message = "the bucket policy must refuse plain HTTP"
  }
  assert {
    condition     = alltrue([for id, c in module.config : strcontains(c.config, "sse=aws:kms&sse_kms_key_id=arn%3Aaws%3Akms")])
    error_message = "the brokers must write with SSE-KMS and the key"
  }
}

run "versioning_when_asked" {
  command = apply

  variables {
    bucket_versioning = true
  }

  assert {
    condition     = one(aws_s3_bucket_versioning.tiered[0].versioning_configuration).status == "Enabled"
    error_message = "bucket_versioning must turn versioning on"
  }
}

run "least_privilege_on_the_prefix" {
  command = apply

  variables {
    bucket_prefix = "prod/orders"
  }

  assert {
    condition = alltrue([
      for s in jsondecode(aws_iam_role_policy.broker.policy).Statement :
      s.Effect == "Allow" && alltrue([for a in flatten([s.Action]) : !endswith(a, "*")])
    ])
    error_message = "no wildcard actions"
  }
  assert {
    condition = alltrue(flatten([
      for s in jsondecode(aws_iam_role_policy.broker.policy).Statement : [
        for r in flatten([s.Resource]) : r != "*" && (!startswith(r, "arn:aws:s3:::orders-tiered") || r == "arn:aws:s3:::orders-tiered" || r == "arn:aws:s3:::orders-tiered/prod/orders/*")
      ]
    ]))
    error_message = "bucket grants must name the bucket or objects under the prefix, never *"
  }
  assert {
    condition = one([
      for s in jsondecode(aws_iam_role_policy.broker.policy).Statement : s.Condition.StringLike["s3:prefix"]
      if contains(flatten([s.Action]), "s3:ListBucket")
    ]) == ["prod/orders/", "prod/orders/*"]
    error_message = "listing must be held to the prefix"
  }
  assert {
    condition = sort(one([
      for s in jsondecode(aws_iam_role_policy.broker.policy).Statement : s.Resource if s.Sid == "BootSecrets"
    ])) == sort([var.tls_keystore_secret_arn, var.tls_truststore_secret_arn, var.sasl_inter_broker_password_secret_arn])
    error_message = "the role reads the named secrets and no others"
  }
  assert {
    condition = one([
      for s in jsondecode(aws_iam_role_policy.broker.policy).Statement : s.Condition.StringEquals["kms:ViaService"]
      if contains(flatten([s.Action]), "kms:Decrypt")
    ]) == "s3.eu-west-1.amazonaws.com"
    error_message = "the key may be used through S3 only"
  }
}

run "only_kafka_open_to_the_world" {
  command = apply

  variables {
    client_cidrs = ["0.0.0.0/0"]
  }

  assert {
    condition = alltrue(flatten([
      for rules in [aws_vpc_security_group_ingress_rule.kafka_clients, aws_vpc_security_group_ingress_rule.between_brokers, aws_vpc_security_group_ingress_rule.admin_monitoring] : [
        for r in rules : r.from_port == 9092 && r.to_port == 9092 if r.cidr_ipv4 == "0.0.0.0/0"
      ]
    ]))
    error_message = "0.0.0.0/0 may reach the Kafka port and no other"
  }
  assert {
    condition     = alltrue([for r in aws_vpc_security_group_ingress_rule.between_brokers : r.referenced_security_group_id == aws_security_group.broker.id && r.cidr_ipv4 == null])
    error_message = "replication, Raft and admin ports are open between brokers only"
  }
  assert {
    condition     = alltrue([for r in aws_vpc_security_group_ingress_rule.admin_monitoring : r.from_port == 9644 && r.cidr_ipv4 == "10.99.0.0/24"])
    error_message = "monitoring reaches the admin port only"
  }
}

run "monitoring_from_anywhere_refused" {
  command = plan

  variables {
    monitoring_cidrs = ["0.0.0.0/0"]
  }

  expect_failures = [var.monitoring_cidrs]
}

run "tls_and_sasl_by_default_secrets_not_in_user_data" {
  command = apply

  assert {
    condition     = alltrue([for c in module.config : strcontains(c.config, "listener.security.protocol.map = CLIENT:SASL_SSL,INTERNAL:SASL_SSL") && strcontains(c.config, "meta.security.protocol = SSL")])
    error_message = "both listeners must speak SASL_SSL and the voters mutual TLS"
  }
  assert {
    condition     = alltrue([for i in aws_instance.broker : strcontains(i.user_data, "secretsmanager get-secret-value") && strcontains(i.user_data, var.sasl_inter_broker_password_secret_arn)])
    error_message = "the instances must read their secrets from Secrets Manager at boot"
  }
  assert {
    condition     = alltrue([for i in aws_instance.broker : strcontains(i.user_data, "Restart=on-failure") && strcontains(i.user_data, "RestartPreventExitStatus=3") && strcontains(i.user_data, "LimitNOFILE=65536") && strcontains(i.user_data, "TimeoutStopSec=120")])
    error_message = "the unit must restart on failure but not after a failed disk (exit status 3), allow descriptors for 4,000 partitions and wait for a graceful stop"
  }
  assert {
    condition     = alltrue([for i in aws_instance.broker : one(i.metadata_options).http_tokens == "required"])
    error_message = "IMDSv2 only"
  }
}

run "tls_needs_its_secrets" {
  command = plan

  variables {
    tls_keystore_secret_arn = ""
  }

  expect_failures = [aws_iam_role.broker]
}
