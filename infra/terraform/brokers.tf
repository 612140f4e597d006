# The brokers. The hot tail lives on the instance's local NVMe, formatted and
# mounted at every boot (instance store does not survive a stop or a
# replacement, and need not: a new or emptied replica refills its hot tail
# from the leaders and the bucket).
#
# The metadata (Raft) state does need to survive: a voter that comes back
# empty under its old id would vote with a log it no longer has. So each
# broker's <data>/meta is its own gp3 EBS volume, in the broker's zone,
# attached to whichever instance holds that broker id: replacing the
# instance (a new AMI, a new instance type) keeps the volume, the id, the
# address (the ENI) and so the voter. Rebuilding a voter by design (remove
# and re-add it) would need a membership change per replacement; the volume
# costs a few dollars a month and needs none.

resource "aws_ebs_volume" "meta" {
  for_each          = local.brokers
  availability_zone = each.value.availability_zone
  size              = var.meta_volume_size_gib
  type              = "gp3"
  encrypted         = true
  tags              = merge(local.tags, { Name = "${var.name}-meta-${each.key}", "strata:node-id" = each.key })
}

module "config" {
  source                     = "./modules/broker-config"
  for_each                   = local.brokers
  node_id                    = each.value.node_id
  rack                       = each.value.availability_zone
  host                       = local.advertised_host[each.key]
  ports                      = var.ports
  protocol                   = local.kafka_protocol
  meta_peers                 = local.meta_peers
  bucket_url                 = "s3://${local.bucket_name}/${var.bucket_prefix}?region=${local.region}&sse=aws:kms&sse_kms_key_id=${urlencode(var.kms_key_arn)}&sse_bucket_key=true"
  sasl_inter_broker_username = var.sasl_inter_broker_username
  admin_token                = var.admin_token_secret_arn != ""
  max_broker_partitions      = var.max_broker_partitions
  extra                      = var.extra_config
}

resource "aws_instance" "broker" {
  for_each             = local.brokers
  ami                  = var.ami_id
  instance_type        = var.instance_type
  iam_instance_profile = aws_iam_instance_profile.broker.name
  availability_zone    = each.value.availability_zone

  primary_network_interface {
    network_interface_id = aws_network_interface.broker[each.key].id
  }

  metadata_options {
    http_tokens                 = "required"
    http_put_response_hop_limit = 1
  }

  root_block_device {
    volume_type = "gp3"
    volume_size = var.root_volume_size_gib
    encrypted   = true
  }

  user_data_replace_on_change = true
  user_data = templatefile("${path.module}/templates/user-data.sh.tftpl", {
    name                 = var.name
    node_id              = each.value.node_id
    meta_volume_id       = aws_ebs_volume.meta[each.key].id
    strata_version       = var.strata_version
    release_url_base     = trimsuffix(var.release_url_base, "/")
    region               = local.region
    config               = module.config[each.key].config
    unit                 = templatefile("${path.module}/templates/strata.service.tftpl", { max_broker_partitions = var.max_broker_partitions, stop_timeout_seconds = var.stop_timeout_seconds })
    tls                  = var.tls_enabled
    sasl                 = var.sasl_enabled
    keystore_secret      = var.tls_keystore_secret_arn
    truststore_secret    = var.tls_truststore_secret_arn
    sasl_password_secret = var.sasl_inter_broker_password_secret_arn
    admin_token_secret   = var.admin_token_secret_arn
  })

  tags = merge(local.tags, { Name = "${var.name}-broker-${each.key}", "strata:node-id" = each.key })
}

resource "aws_volume_attachment" "meta" {
  for_each    = local.brokers
  device_name = "/dev/sdf"
  volume_id   = aws_ebs_volume.meta[each.key].id
  instance_id = aws_instance.broker[each.key].id
}
