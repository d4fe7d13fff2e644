"""Elastic membership of the real driver: a node that starts late (or comes
back) joins a running broadcast and gets the object from the others, not its
share from storage again. Real versitygw behind the pacing proxy (so the
broadcast lasts seconds), real TCP between nodes, outputs in memory."""

from __future__ import annotations

import hashlib
import threading
import time

import numpy as np
import pytest
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast.node import BcastConfig
from parcomm.apps.bcast.proxy import PacingProxy
from parcomm.apps.bcast.real import NodeReport, RealNode
from parcomm.apps.bcast.rendezvous import local_table, reserve_local_sockets
from parcomm.apps.bcast.s3 import S3Client
from parcomm.auth import JobKey

PIECE = 64 * 1024
WORK = 2
SIZE = 64 * PIECE  # 4 MiB: 32 works, 8 per node
HANG_GUARD_S = 90.0


@pytest.fixture(scope="module")
def obj(versitygw, s3_bucket):
    client = S3Client(versitygw.s3_config())
    url = f"s3://{s3_bucket}/elastic/obj.bin"
    data = np.random.default_rng(11).bytes(SIZE)
    client.put_bytes(url, data)
    mf.prepare(url, PIECE, client=client)
    return url, data


def _run_nodes(gw, url, starts: dict[int, float], nodes: int, join_timeout: float):
    """Run ``nodes`` RealNodes on threads, rank r starting ``starts.get(r, 0)`` s late."""
    # 200 kB/s per GET: the broadcast takes seconds, so a late start is mid-run.
    with PacingProxy(gw.endpoint_url, profile=[(1.0, 2e5)], seed=5) as proxy:
        s3 = gw.s3_config(proxy.endpoint_url)
        manifest = mf.load(url, client=S3Client(s3))
        socks = reserve_local_sockets(nodes)
        table = local_table(socks)
        key = JobKey.generate()
        cfg = BcastConfig(piece_size=PIECE, work_pieces=WORK, s3_connections=2, peers=3, choke_interval=0.5)
        bufs = [bytearray(SIZE) for _ in range(nodes)]
        reports: dict[int, NodeReport] = {}
        failures: dict[int, BaseException] = {}
        started: dict[int, float] = {}
        machines: dict[int, RealNode] = {}
        t0 = time.monotonic()

        def node(rank: int) -> None:
            time.sleep(starts.get(rank, 0.0))
            started[rank] = time.monotonic() - t0
            machines[rank] = RealNode(
                rank, table, socks[rank], url, bufs[rank], manifest, algo="steal", config=cfg,
                client=S3Client(s3, seed=rank), key=key, timeout=60, linger=10, join_timeout=join_timeout,
            )  # fmt: skip
            try:
                reports[rank] = machines[rank].run()
            except BaseException as exc:  # reported by the caller
                failures[rank] = exc

        threads = [threading.Thread(target=node, args=(r,)) for r in range(nodes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=HANG_GUARD_S)
        for s in socks:
            s.close()
    return bufs, reports, failures, started, machines


def test_a_node_started_late_joins_and_fetches_from_the_others(versitygw, obj):
    url, data = obj
    late = 3
    # Late by more than the join timeout plus the handshake floor (real.HANDSHAKE_FLOOR_S): counted out.
    bufs, reports, failures, started, machines = _run_nodes(versitygw, url, {late: 3.0}, nodes=4, join_timeout=0.5)
    assert not failures, failures
    assert all(hashlib.sha256(b).digest() == hashlib.sha256(data).digest() for b in bufs)
    joiner = reports[late]
    # It was counted out (its heir, rank 0, fetched its share) and readmitted: it gets the
    # object mostly from the others. From storage it may fetch works it stole from slower
    # ranks (no waste) and the GETs of its own share it had started before it heard it was
    # out: only those are fetched twice.
    in_flight = 2 * WORK * PIECE
    assert joiner.bytes_from_peers >= SIZE // 2, joiner
    assert sum(r.bytes_from_storage for r in reports.values()) <= SIZE + in_flight  # egress ~1x
    assert late in machines[0].node.planner.adopted  # its heir (next rank in the ring) took its share over
    assert started[late] >= 3.0 and all(late not in r.peers_lost for r in reports.values())


def test_a_node_on_time_is_not_counted_out(versitygw, obj):
    """The same run with nobody late: no rank is lost, nobody adopts, each fetches its share."""
    url, data = obj
    bufs, reports, failures, _, machines = _run_nodes(versitygw, url, {}, nodes=4, join_timeout=30.0)
    assert not failures, failures
    assert all(bytes(b) == data for b in bufs)
    assert sum(r.bytes_from_storage for r in reports.values()) == SIZE
    assert not any(m.node.planner.adopted for m in machines.values())
