# The tiered-storage bucket: private, SSE-KMS with a bucket key, stale
# multipart uploads aborted, versioning only when asked.

resource "aws_s3_bucket" "tiered" {
  bucket        = local.bucket_name
  force_destroy = var.bucket_force_destroy
  tags          = local.tags
}

resource "aws_s3_bucket_public_access_block" "tiered" {
  bucket                  = aws_s3_bucket.tiered.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "tiered" {
  bucket = aws_s3_bucket.tiered.id

  rule {
    bucket_key_enabled = true

    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "tiered" {
  bucket = aws_s3_bucket.tiered.id

  rule {
    id     = "abort-stale-multipart-uploads"
    status = "Enabled"

    filter {
      prefix = ""
    }

    abort_incomplete_multipart_upload {
      days_after_initiation = var.abort_incomplete_multipart_days
    }
  }
}

resource "aws_s3_bucket_versioning" "tiered" {
  count  = var.bucket_versioning ? 1 : 0
  bucket = aws_s3_bucket.tiered.id

  versioning_configuration {
    status = "Enabled"
  }
}

# Refuse plain HTTP and uploads not encrypted with the cluster's key.
resource "aws_s3_bucket_policy" "tiered" {
  bucket = aws_s3_bucket.tiered.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "DenyInsecureTransport"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:*"
        Resource  = [aws_s3_bucket.tiered.arn, "${aws_s3_bucket.tiered.arn}/*"]
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
      {
        Sid       = "DenyOtherKeys"
        Effect    = "Deny"
        Principal = "*"
        Action    = "s3:PutObject"
        Resource  = "${aws_s3_bucket.tiered.arn}/*"
        Condition = { StringNotEqualsIfExists = { "s3:x-amz-server-side-encryption-aws-kms-key-id" = var.kms_key_arn } }
      },
    ]
  })

  depends_on = [aws_s3_bucket_public_access_block.tiered]
}
