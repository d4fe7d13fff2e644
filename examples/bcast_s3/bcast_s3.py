"""Broadcast an object from a real S3 server to 4 local nodes, then the same
protocol on the simulated storage model.

A versitygw S3 server serves a temporary directory on 127.0.0.1; we put a
12 MiB object there, make its hash list (``parcomm bcast prepare``), and run
4 node processes with the steal algorithm (``parcomm bcast URL --local 4``).
Times vary from run to run, so this prints only what must not: every output
matches the object, and storage sent the object once, not four times.
"""

import hashlib
import tempfile
from pathlib import Path

import numpy as np
from parcomm.apps.bcast import manifest
from parcomm.apps.bcast.launch import Job, run_local
from parcomm.apps.bcast.node import BcastConfig
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.sim import simulate
from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw

SIZE = 12 << 20
data = np.random.default_rng(1).bytes(SIZE)

with tempfile.TemporaryDirectory() as tmp, VersityGW(Path(tmp, "s3"), binary=ensure_versitygw()) as gw:
    gw.create_bucket("demo")
    client = S3Client(gw.s3_config())
    url = "s3://demo/weights.bin"
    client.put_bytes(url, data)
    manifest.prepare(url, 256 << 10, client=client)  # 256 KiB pieces

    job = Job(url, str(Path(tmp, "out.{rank}")), "steal", BcastConfig(work_pieces=8), gw.s3_config())
    result = run_local(job, 4)
    want = hashlib.sha256(data).hexdigest()
    for rank in range(4):
        got = hashlib.sha256(Path(tmp, f"out.{rank}").read_bytes()).hexdigest()
        print(f"node {rank}: output matches the object: {got == want}")
    egress = sum(r.bytes_from_storage for r in result.reports)
    print(f"bytes from S3, all nodes together: {egress / SIZE:.2f} x the object")

# The same state machines on the storage model of seed 004 (deterministic).
sim = simulate(32, 1 << 30, "steal", seed=1)
flat = simulate(32, 1 << 30, "flat", seed=1)
print(f"simulated, 32 nodes, 1 GiB: steal {sim.total_mb_s / flat.total_mb_s:.2f} x flat's total throughput")
