"""``parcomm bcast demo``: the whole tool on one machine.

A real S3 server (versitygw) on 127.0.0.1 serves a temporary directory; an
object of random bytes is put there, its hash list prepared, and N local
node processes broadcast it; every output's sha256 is checked against the
object's. Nothing leaves loopback; everything started is stopped by pid.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from . import manifest
from .emu import object_bytes
from .launch import Job, run_local
from .node import BcastConfig
from .s3 import S3Client
from .versitygw import VersityGW, ensure_versitygw


def run_demo(
    nodes: int = 4,
    size: int = 64 << 20,
    algo: str = "steal",
    *,
    quiet: bool = True,
    piece_size: int = 1 << 20,
    seed: int = 0,
) -> dict:
    binary = ensure_versitygw(install=True)
    with tempfile.TemporaryDirectory(prefix="parcomm-bcast-demo-") as tmp:
        root, outdir = Path(tmp, "s3"), Path(tmp, "out")
        root.mkdir()
        outdir.mkdir()
        data = object_bytes(size, seed)
        with VersityGW(root, binary=binary) as gw:
            gw.create_bucket("demo")
            client = S3Client(gw.s3_config())
            url = "s3://demo/object.bin"
            client.put_bytes(url, data)
            manifest.prepare(url, piece_size, client=client)
            job = Job(url, str(outdir / "object.{rank}"), algo, BcastConfig(seed=seed), gw.s3_config(), timeout=600)
            result = run_local(job, nodes)
        digest = hashlib.sha256(data).hexdigest()
        outputs = [outdir / f"object.{r}" for r in range(nodes)]
        matches = [p.exists() and hashlib.sha256(p.read_bytes()).hexdigest() == digest for p in outputs]
        egress = sum(r.bytes_from_storage for r in result.reports)
        return {
            "procs": nodes,
            "size_bytes": size,
            "algo": algo,
            "time_s": result.seconds,
            "all_match": all(matches),
            "errors": {str(k): v for k, v in result.errors.items()},
            "egress_ratio": egress / size if size else 0.0,
            "reports": [r.to_dict() for r in result.reports],
        }
