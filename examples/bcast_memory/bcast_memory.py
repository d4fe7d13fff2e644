"""Deliver an object from S3 straight into memory, verified, with no file.

``broadcast_into(buffer, url)`` fills a caller's buffer (here a numpy array;
a bytearray or a pinned host buffer work the same) with the object: every
piece is checked against the hash list before the call returns (``verify=
"whole"`` checks the whole object's sha256 too). Given ``comm=`` (an mpi4py communicator)
every rank gets its own copy, fetching 1/N from storage and the rest from
the other ranks; alone, as here, this process fetches it all.
"""

import hashlib
import tempfile
from pathlib import Path

import numpy as np
from parcomm.apps.bcast import manifest
from parcomm.apps.bcast.api import broadcast_into, object_size
from parcomm.apps.bcast.node import BcastConfig
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw

data = np.random.default_rng(2).bytes(5 << 20)

with tempfile.TemporaryDirectory() as tmp, VersityGW(Path(tmp, "s3"), binary=ensure_versitygw()) as gw:
    gw.create_bucket("demo")
    S3Client(gw.s3_config()).put_bytes("s3://demo/weights.bin", data)
    manifest.prepare("s3://demo/weights.bin", 256 << 10, client=S3Client(gw.s3_config()))

    weights = np.empty(object_size("s3://demo/weights.bin", gw.s3_config()), dtype=np.uint8)
    report = broadcast_into(weights, "s3://demo/weights.bin", s3=gw.s3_config(), config=BcastConfig(work_pieces=4))
    print(
        f"{weights.nbytes} bytes in memory; sha256 matches: {hashlib.sha256(weights).digest() == hashlib.sha256(data).digest()}"
    )
    print(f"from S3: {report.bytes_from_storage} bytes, from peers: {report.bytes_from_peers}")
