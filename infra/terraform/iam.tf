# The brokers' role: the bucket's prefix and nothing else of it, the KMS key
# for that bucket only (through S3), the named secrets, and the release.

resource "aws_iam_role" "broker" {
  name = "${var.name}-broker"
  tags = local.tags
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "ec2.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })

  lifecycle {
    precondition {
      condition     = !var.tls_enabled || (var.tls_keystore_secret_arn != "" && var.tls_truststore_secret_arn != "")
      error_message = "tls_enabled needs tls_keystore_secret_arn and tls_truststore_secret_arn."
    }
    precondition {
      condition     = !var.sasl_enabled || var.sasl_inter_broker_password_secret_arn != ""
      error_message = "sasl_enabled needs sasl_inter_broker_password_secret_arn."
    }
    precondition {
      condition     = (var.advertised_domain == "") == (var.route53_zone_id == "")
      error_message = "advertised_domain and route53_zone_id go together."
    }
  }
}

locals {
  bucket_policy_statements = [
    {
      Sid       = "ListThePrefixOnly"
      Effect    = "Allow"
      Action    = ["s3:ListBucket", "s3:ListBucketMultipartUploads"]
      Resource  = local.bucket_arn
      Condition = { StringLike = { "s3:prefix" = ["${var.bucket_prefix}/", "${var.bucket_prefix}/*"] } }
    },
    {
      Sid    = "ObjectsUnderThePrefix"
      Effect = "Allow"
      Action = [
        "s3:GetObject",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts",
      ]
      Resource = "${local.bucket_arn}/${var.bucket_prefix}/*"
    },
    {
      Sid       = "TheBucketKeyThroughS3"
      Effect    = "Allow"
      Action    = ["kms:GenerateDataKey", "kms:Decrypt"]
      Resource  = var.kms_key_arn
      Condition = { StringEquals = { "kms:ViaService" = "s3.${local.region}.amazonaws.com" } }
    },
  ]
}

resource "aws_iam_role_policy" "broker" {
  name = "${var.name}-broker"
  role = aws_iam_role.broker.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      local.bucket_policy_statements,
      length(local.secret_arns) == 0 ? [] : [{
        Sid      = "BootSecrets"
        Effect   = "Allow"
        Action   = "secretsmanager:GetSecretValue"
        Resource = local.secret_arns
      }],
      var.release_bucket_arn == "" ? [] : [{
        Sid      = "Release"
        Effect   = "Allow"
        Action   = "s3:GetObject"
        Resource = "${var.release_bucket_arn}/*"
      }],
    )
  })
}

resource "aws_iam_instance_profile" "broker" {
  name = "${var.name}-broker"
  role = aws_iam_role.broker.name
  tags = local.tags
}
