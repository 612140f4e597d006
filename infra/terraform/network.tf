# One security group for the brokers; a fixed address per broker (an ENI that
# outlives its instance, so advertised listeners and --meta-peers never
# change); a network load balancer for bootstrap.

resource "aws_security_group" "broker" {
  name        = "${var.name}-broker"
  description = "strata brokers of ${var.name}"
  vpc_id      = var.vpc_id
  tags        = local.tags
}

# Clients: the Kafka port only, from client_cidrs.
resource "aws_vpc_security_group_ingress_rule" "kafka_clients" {
  for_each          = toset(var.client_cidrs)
  security_group_id = aws_security_group.broker.id
  description       = "Kafka clients"
  ip_protocol       = "tcp"
  from_port         = var.ports.kafka
  to_port           = var.ports.kafka
  cidr_ipv4         = each.value
  tags              = local.tags
}

# Between brokers: every strata port (Kafka for the load balancer's health
# checks, replication, Raft, admin), from the group itself only.
resource "aws_vpc_security_group_ingress_rule" "between_brokers" {
  for_each                     = { for k, v in var.ports : k => v }
  security_group_id            = aws_security_group.broker.id
  description                  = "strata ${each.key} port between brokers"
  ip_protocol                  = "tcp"
  from_port                    = each.value
  to_port                      = each.value
  referenced_security_group_id = aws_security_group.broker.id
  tags                         = local.tags
}

# Monitoring and operators: the admin port (metrics, health, cluster status).
resource "aws_vpc_security_group_ingress_rule" "admin_monitoring" {
  for_each          = toset(var.monitoring_cidrs)
  security_group_id = aws_security_group.broker.id
  description       = "strata admin port from monitoring"
  ip_protocol       = "tcp"
  from_port         = var.ports.admin
  to_port           = var.ports.admin
  cidr_ipv4         = each.value
  tags              = local.tags
}

# Out: S3, KMS, Secrets Manager and the release over HTTPS; the other brokers.
resource "aws_vpc_security_group_egress_rule" "https" {
  security_group_id = aws_security_group.broker.id
  description       = "HTTPS: S3, KMS, Secrets Manager, the release"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
  cidr_ipv4         = "0.0.0.0/0"
  tags              = local.tags
}

resource "aws_vpc_security_group_egress_rule" "between_brokers" {
  for_each                     = { for k, v in var.ports : k => v }
  security_group_id            = aws_security_group.broker.id
  description                  = "strata ${each.key} port to other brokers"
  ip_protocol                  = "tcp"
  from_port                    = each.value
  to_port                      = each.value
  referenced_security_group_id = aws_security_group.broker.id
  tags                         = local.tags
}

# Each broker's fixed address, in its zone's subnet.
resource "aws_network_interface" "broker" {
  for_each        = local.brokers
  subnet_id       = each.value.subnet_id
  security_groups = [aws_security_group.broker.id]
  description     = "strata ${var.name} broker ${each.key}"
  tags            = merge(local.tags, { Name = "${var.name}-broker-${each.key}" })
}

resource "aws_route53_record" "broker" {
  for_each = var.advertised_domain == "" ? {} : local.brokers
  zone_id  = var.route53_zone_id
  name     = "b${each.key}.${var.advertised_domain}"
  type     = "A"
  ttl      = 300
  records  = [aws_network_interface.broker[each.key].private_ip]
}

locals {
  advertised_host = {
    for id, b in local.brokers : id => (var.advertised_domain != "" ? "b${id}.${var.advertised_domain}" : aws_network_interface.broker[id].private_ip)
  }
  meta_peers = join(",", [for id, b in local.brokers : "${id}=${local.advertised_host[id]}:${var.ports.raft}" if b.voter])
}

# Bootstrap: clients dial the load balancer once, then each broker's
# advertised address. TCP passthrough, so TLS and SASL end at the brokers.
resource "aws_lb" "bootstrap" {
  name                             = "${var.name}-bootstrap"
  load_balancer_type               = "network"
  internal                         = var.nlb_internal
  subnets                          = [for s in var.subnets : s.id]
  security_groups                  = [aws_security_group.broker.id]
  enable_cross_zone_load_balancing = true
  tags                             = local.tags
}

resource "aws_lb_target_group" "kafka" {
  name                 = "${var.name}-kafka"
  port                 = var.ports.kafka
  protocol             = "TCP"
  target_type          = "instance"
  vpc_id               = var.vpc_id
  deregistration_delay = "30"
  tags                 = local.tags

  health_check {
    protocol = "TCP"
    port     = tostring(var.ports.kafka)
  }
}

resource "aws_lb_listener" "kafka" {
  load_balancer_arn = aws_lb.bootstrap.arn
  port              = var.ports.kafka
  protocol          = "TCP"
  tags              = local.tags

  default_action {
    type             = "forward"
    target_group_arn = aws_lb_target_group.kafka.arn
  }
}

resource "aws_lb_target_group_attachment" "kafka" {
  for_each         = local.brokers
  target_group_arn = aws_lb_target_group.kafka.arn
  target_id        = aws_instance.broker[each.key].id
  port             = var.ports.kafka
}
