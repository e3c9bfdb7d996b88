"""A real S3 API on loopback for tests: moto's ``ThreadedMotoServer`` (no other setup).

:func:`moto_endpoint` starts one server per test session (bound to 127.0.0.1, a free port) and
sets dummy AWS credentials in the environment, so every client (boto3, ``pyarrow.fs``, Spark
executors started afterwards) finds them; :func:`fresh_bucket` makes a bucket per test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


def start_moto() -> Iterator[str]:
    """Start the server and yield its endpoint URL (``http://127.0.0.1:<port>``)."""
    from moto.server import ThreadedMotoServer

    saved = {key: os.environ.get(key) for key in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def fresh_bucket(endpoint: str) -> str:
    """Create a new bucket on the server; its name."""
    import boto3

    name = f"seglog-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=name)
    return name


def upload_tree(endpoint: str, bucket: str, prefix: str, local: object) -> str:
    """Upload every file below the local directory ``local`` to ``s3://bucket/prefix/``;
    returns that URI."""
    from pathlib import Path

    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    root = Path(str(local))
    for path in sorted(root.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            client.upload_file(str(path), bucket, key)
    return f"s3://{bucket}/{prefix}"
