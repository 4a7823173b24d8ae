"""The S3 sink against a real S3 API server: moto's ``moto_server`` (the ``dev``
extra), started here with IAM authentication on, so every request must carry a
valid AWS Signature Version 4 from a real access key or it is refused."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from audit.checkpoints import checkpoint_if_due
from audit.hashing import signature_ok
from audit.models import AuditEvent
from audit.services import Damage, record_event, seal_and_checkpoint, verify_chain
from audit.sinks.s3 import Bucket, S3Error

pytestmark = pytest.mark.django_db

BUCKET = "quiver-audit"
# The requests moto lets through unsigned (creating the user, its policy, its key
# and the bucket); every request after them is checked.
SETUP_REQUESTS = 4


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def s3_server() -> Iterator[dict[str, str]]:
    """moto_server on a free port, one user allowed s3:*, one object-lock bucket."""
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    moto = Path(sys.executable).with_name("moto_server")
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SETUP_REQUESTS)}
    server = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(endpoint)
        yield {"endpoint": endpoint, **_user_and_bucket(endpoint)}
    finally:
        server.terminate()
        server.wait(timeout=10)


def _wait_for(endpoint: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{endpoint}/moto-api/", timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError("moto_server did not start")


def _user_and_bucket(endpoint: str) -> dict[str, str]:
    setup: Any = {
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "setup",
        "aws_secret_access_key": "setup",
    }
    iam = boto3.client("iam", **setup)
    iam.create_user(UserName="quiver")
    iam.put_user_policy(
        UserName="quiver",
        PolicyName="audit-checkpoints",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
            }
        ),
    )
    key = iam.create_access_key(UserName="quiver")["AccessKey"]
    boto3.client("s3", **setup).create_bucket(
        Bucket=BUCKET, ObjectLockEnabledForBucket=True
    )
    return {"access": key["AccessKeyId"], "secret": key["SecretAccessKey"]}


@pytest.fixture
def bucket_sink(settings: Any, s3_server: dict[str, str]) -> Bucket:
    """The S3 sink on, under a prefix of this test's own."""
    settings.QUIVER_AUDIT_CHECKPOINT_S3 = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    settings.QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT = s3_server["endpoint"]
    settings.QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY = s3_server["access"]
    settings.QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY = s3_server["secret"]
    from audit.sinks.s3 import bucket_from_settings

    return bucket_from_settings()


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary},
        output={},
    )


def test_the_bucket_holds_one_object_per_checkpoint_named_by_head_seq(
    settings, bucket_sink, audit_checkpoints_per_test
):
    settings.QUIVER_AUDIT_CHECKPOINT_S = 0
    record("a")
    seal_and_checkpoint()
    record("b")
    record("c")
    seal_and_checkpoint()
    keys = bucket_sink.keys()
    assert [key.rsplit("/", 1)[1] for key in keys] == [
        "000000000001-checkpoint.json",
        "000000000003-checkpoint.json",
    ]
    file_lines = audit_checkpoints_per_test.read_text().splitlines()
    bodies = [(bucket_sink.get(key) or b"").decode() for key in keys]
    assert bodies == [line + "\n" for line in file_lines]
    assert all(signature_ok(json.loads(body)) for body in bodies)
    status = verify_chain().sinks["s3"]
    assert (status["behind"], status["failures"]) == (False, 0)


def test_an_object_is_never_replaced(bucket_sink):
    record = {"kind": "checkpoint", "head_seq": 7, "sig": "first"}
    bucket_sink.send(record, '{"sig": "first"}')
    bucket_sink.send(record, '{"sig": "first"}')  # the same line again: a retry
    with pytest.raises(S3Error, match="already holds another line"):
        bucket_sink.send(record, '{"sig": "forged"}')
    [key] = bucket_sink.keys()
    assert bucket_sink.get(key) == b'{"sig": "first"}\n'


def test_objects_can_be_put_under_object_lock(settings, bucket_sink):
    settings.QUIVER_AUDIT_CHECKPOINT_S3_LOCK_DAYS = 1
    from audit.sinks.s3 import bucket_from_settings

    locked = bucket_from_settings()
    locked.send({"kind": "checkpoint", "head_seq": 1}, "{}")
    [key] = locked.keys()
    head = boto3.client(
        "s3",
        endpoint_url=settings.QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id=settings.QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY,
        aws_secret_access_key=settings.QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY,
    ).head_object(Bucket=BUCKET, Key=key)
    assert head["ObjectLockMode"] == "COMPLIANCE"


def test_a_request_signed_with_a_wrong_secret_is_refused(settings, bucket_sink):
    settings.QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY = "not-the-secret"
    from audit.sinks.s3 import bucket_from_settings

    with pytest.raises(S3Error, match="403 SignatureDoesNotMatch"):
        bucket_from_settings().send({"kind": "checkpoint", "head_seq": 2}, "{}")


def test_verify_against_the_bucket_catches_a_chain_and_file_rebuilt_with_the_key(
    bucket_sink, audit_checkpoints_per_test
):
    """The db owner's host account holds the key: it rebuilds the chain and writes
    a new checkpoint file that agrees with it. The bucket's copy does not."""
    for n in range(3):
        record(f"true {n}")
    seal_and_checkpoint()
    with connection.cursor() as cursor:  # as the table's owner, triggers off
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute("TRUNCATE audit_auditevent")
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")
    for n in range(3):
        record(f"rewritten {n}")
    audit_checkpoints_per_test.unlink()
    seal_and_checkpoint()
    checkpoint_if_due(force=True)
    assert verify_chain().ok, "the rewritten file agrees with the rebuilt chain"
    check = verify_chain(checkpoints="s3")
    assert check.kind == Damage.CHECKPOINT_MISMATCH
    assert check.first_bad_id == AuditEvent.objects.get(seq=3).pk
    assert check.checkpoints == "s3"
    assert check.sinks["s3"]["failures"] >= 1, "the bucket refused the new line"
    with pytest.raises(CommandError, match="checkpoint_mismatch"):
        call_command("audit_verify", "--checkpoints", "s3", stdout=StringIO())


def test_verify_against_the_bucket_names_a_missing_line(bucket_sink, settings):
    settings.QUIVER_AUDIT_CHECKPOINT_S = 0
    record("a")
    seal_and_checkpoint()
    record("b")
    seal_and_checkpoint()
    record("c")
    seal_and_checkpoint()
    assert verify_chain(checkpoints="s3").ok
    boto3.client(
        "s3",
        endpoint_url=settings.QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id=settings.QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY,
        aws_secret_access_key=settings.QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY,
    ).delete_object(Bucket=BUCKET, Key=bucket_sink.keys()[1])
    check = verify_chain(checkpoints="s3")
    assert check.kind == Damage.BAD_CHECKPOINT
    assert "a line was removed" in check.problem
