"""The stack's state: the runs' table, the idempotency table and the data bucket.

`infra.local.aws.create_resources` builds the embedded (moto) tables from these same
properties, so local and deployed state share one layout.
"""

from __future__ import annotations

from typing import Any

from infra.sam.intrinsics import get_arn, ref, sub
from runtime.spec import AgentfnSpec

TABLE = "StateTable"
IDEMPOTENCY_TABLE = "IdempotencyTable"
BUCKET = "DataBucket"
#: The sparse index the sweeper reads: only items that carry `sweep_pk` appear in it.
SWEEP_INDEX = "sweep"


def table_resource() -> dict[str, Any]:
    """The runs' table. Partitions are `RUN#{run_id}` and `SES#{agent}#{session}` (IAM scopes
    each agent's function to its own with `dynamodb:LeadingKeys`); the `sweep` index is
    KEYS_ONLY because the sweeper reads the run head by key anyway."""
    return {
        "Type": "AWS::DynamoDB::Table",
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "sweep_pk", "AttributeType": "S"},
                {"AttributeName": "sweep_at", "AttributeType": "S"},
            ],
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": SWEEP_INDEX,
                    "KeySchema": [
                        {"AttributeName": "sweep_pk", "KeyType": "HASH"},
                        {"AttributeName": "sweep_at", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
            "TimeToLiveSpecification": {"AttributeName": "expires_at", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
        },
    }


def idempotency_table_resource() -> dict[str, Any]:
    """Idempotency-Key records of the API, one partition per key (`id`), in their own table:
    in the runs' table they shared one partition key, a hot partition, and only the API
    function may touch them. Records live 24 hours, so losing the table loses nothing that
    matters: it is deleted with the stack."""
    return {
        "Type": "AWS::DynamoDB::Table",
        "DeletionPolicy": "Delete",
        "UpdateReplacePolicy": "Delete",
        "Properties": {
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": True},
        },
    }


def bucket(spec: AgentfnSpec) -> dict[str, Any]:
    days = max(1, round(spec.deployment.retention / 86_400))
    return {
        "Type": "AWS::S3::Bucket",
        "DeletionPolicy": "Retain",
        "UpdateReplacePolicy": "Retain",
        "Properties": {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"},
                        "BucketKeyEnabled": True,
                    }
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            "LifecycleConfiguration": {
                "Rules": [
                    {
                        "Id": "ExpireRunData",
                        "Status": "Enabled",
                        "ExpirationInDays": days,
                        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                    }
                ]
            },
        },
    }


def bucket_policy() -> dict[str, Any]:
    return {
        "Type": "AWS::S3::BucketPolicy",
        "Properties": {
            "Bucket": ref(BUCKET),
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "DenyInsecureTransport",
                        "Effect": "Deny",
                        "Principal": "*",
                        "Action": "s3:*",
                        "Resource": [get_arn(BUCKET), sub(f"${{{BUCKET}.Arn}}/*")],
                        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                    }
                ],
            },
        },
    }
