"""Delivery other than a file: the object streamed to stdout in order
(``--out -``), into a caller's buffer (:func:`parcomm.apps.bcast.api.broadcast_into`),
and the summary every run reports (completion percentiles, egress, retries).
Real versitygw on 127.0.0.1 and real TCP between nodes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast.api import broadcast_into, object_size
from parcomm.apps.bcast.layout import Layout
from parcomm.apps.bcast.node import BcastConfig
from parcomm.apps.bcast.output import OutputError
from parcomm.apps.bcast.real import NodeReport, RealNode
from parcomm.apps.bcast.rendezvous import local_table, reserve_local_sockets
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.store import MemoryStore, WholeDigest
from parcomm.apps.bcast.summary import percentile, summarize
from parcomm.auth import JobKey

PIECE = 64 * 1024
SIZE = 37 * PIECE + 1234  # not a whole number of pieces


@pytest.fixture(scope="module")
def obj(versitygw, s3_bucket):
    client = S3Client(versitygw.s3_config())
    url = f"s3://{s3_bucket}/delivery/obj.bin"
    data = np.random.default_rng(7).bytes(SIZE)
    client.put_bytes(url, data)
    mf.prepare(url, PIECE, client=client)
    return url, data


@pytest.mark.parametrize("verify", ["whole", "pieces"])
def test_out_dash_streams_the_object_in_order_to_a_pipe(versitygw, obj, tmp_path, verify):
    url, data = obj
    env = {**os.environ, **versitygw.environ()}
    cmd = f'"{sys.executable}" -m parcomm bcast get {url} --out - --local 1 --verify {verify} | sha256sum'
    run = subprocess.run(cmd, shell=True, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[0] == hashlib.sha256(data).hexdigest()
    assert "completion p50" in run.stderr  # the summary goes to stderr, never into the stream
    said = {"whole": "verified every piece's sha256 and the whole object's", "pieces": "(--verify pieces)"}
    assert said[verify] in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_out_dash_usage_errors():
    for args, needle in [
        (["--local", "3"], "streams one node's copy"),
        (["--local", "1", "--json"], "both write to stdout"),
    ]:
        run = subprocess.run(
            [sys.executable, "-m", "parcomm", "bcast", "get", "s3://b/k", "--out", "-", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 2 and needle in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("verify", ["whole", "pieces"])
def test_broadcast_into_a_numpy_buffer_verifies_without_a_disk_write(versitygw, obj, tmp_path, monkeypatch, verify):
    url, data = obj
    monkeypatch.chdir(tmp_path)
    s3 = versitygw.s3_config()
    buf = np.zeros(object_size(url, s3), dtype=np.uint8)
    report = broadcast_into(buf, url, s3=s3, config=BcastConfig(piece_size=PIECE, work_pieces=3), verify=verify)
    assert buf.tobytes() == data
    assert report.bytes_from_storage == SIZE and report.complete_s is not None
    assert report.verify == verify
    assert list(tmp_path.iterdir()) == []  # nothing on disk


@pytest.mark.parametrize("bad", ["short", "readonly", "strided"])
def test_broadcast_into_refuses_a_buffer_that_cannot_hold_the_object(versitygw, obj, bad):
    url, _ = obj
    buf = {
        "short": bytearray(SIZE - 1),
        "readonly": bytes(SIZE),
        "strided": np.zeros(2 * SIZE, dtype=np.uint8)[::2],
    }[bad]
    with pytest.raises(OutputError, match={"short": "holds", "readonly": "read-only", "strided": "contiguous"}[bad]):
        broadcast_into(buf, url, s3=versitygw.s3_config())


def test_three_nodes_exchange_into_buffers(versitygw, obj):
    """Three nodes in one process, each into its own bytearray: 1/3 each from S3, the rest
    sent between them from the buffers (no file anywhere)."""
    url, data = obj
    client = S3Client(versitygw.s3_config())
    manifest = mf.load(url, client=client)
    socks = reserve_local_sockets(3)
    table = local_table(socks)
    key = JobKey.generate()
    cfg = BcastConfig(piece_size=PIECE, work_pieces=3, s3_connections=2, peers=2, choke_interval=0.5)
    bufs = [bytearray(SIZE) for _ in range(3)]
    reports: dict[int, NodeReport] = {}
    failures: dict[int, BaseException] = {}

    def node(rank: int) -> None:
        try:
            reports[rank] = RealNode(
                rank, table, socks[rank], url, bufs[rank], manifest, algo="steal", config=cfg,
                client=S3Client(versitygw.s3_config(), seed=rank), key=key, timeout=60, linger=5,
            ).run()  # fmt: skip
        except BaseException as exc:  # reported below
            failures[rank] = exc

    threads = [threading.Thread(target=node, args=(r,)) for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    for s in socks:
        s.close()
    assert not failures, failures
    assert all(bytes(b) == data for b in bufs)
    assert sum(r.bytes_from_storage for r in reports.values()) == SIZE  # egress 1x
    assert sum(r.bytes_from_peers for r in reports.values()) == 2 * SIZE
    summary = summarize(list(reports.values()))
    assert summary["origin_egress_x"] == 1.0 and summary["completion_s"]["max"] is not None


def test_whole_digest_hashes_in_order_whatever_the_arrival_order():
    data = np.random.default_rng(1).bytes(10 * 1000 + 17)
    layout = Layout(len(data), piece_size=1000, work_pieces=2)
    buf = bytearray(len(data))
    store = MemoryStore(buf, len(data))
    sink_r, sink_w = os.pipe()
    digest = WholeDigest(store, layout.piece_bytes, layout.pieces, sink=sink_w)
    for piece in np.random.default_rng(2).permutation(layout.pieces):
        start, end = layout.piece_bytes(int(piece))
        store.write(start, data[start:end])
        digest.mark(int(piece))
        digest.mark(int(piece))  # a duplicate is harmless
    assert digest.result(timeout=10) == hashlib.sha256(data).digest()
    os.close(sink_w)
    streamed = b""
    while chunk := os.read(sink_r, 1 << 16):
        streamed += chunk
    os.close(sink_r)
    assert streamed == data  # in order, once
    digest.stop()


def test_in_order_pass_without_hashing_streams_only():
    data = np.random.default_rng(3).bytes(5 * 1000 + 3)
    layout = Layout(len(data), piece_size=1000, work_pieces=2)
    store = MemoryStore(bytearray(data), len(data))
    sink_r, sink_w = os.pipe()
    stream = WholeDigest(store, layout.piece_bytes, layout.pieces, sink=sink_w, hashing=False)
    for piece in reversed(range(layout.pieces)):
        stream.mark(piece)
    assert stream.wait(timeout=10) and stream.result(timeout=0) is None  # done, no digest
    os.close(sink_w)
    streamed = b""
    while chunk := os.read(sink_r, 1 << 16):
        streamed += chunk
    os.close(sink_r)
    assert streamed == data
    stream.stop()


def test_whole_digest_waits_for_a_missing_piece():
    layout = Layout(3000, piece_size=1000, work_pieces=1)
    store = MemoryStore(bytearray(3000), 3000)
    digest = WholeDigest(store, layout.piece_bytes, layout.pieces)
    digest.mark(0)
    digest.mark(2)
    assert digest.result(timeout=0.2) is None and digest.hashed == 1
    digest.mark(1)
    assert digest.result(timeout=10) == hashlib.sha256(bytes(3000)).digest()
    digest.stop()


def test_percentiles_are_nearest_rank_and_summary_counts_failures():
    assert percentile([], 50) is None
    values = [float(v) for v in range(1, 17)]  # 16 nodes
    assert percentile(values, 50) == 8.0 and percentile(values, 95) == 16.0 and percentile(values, 99) == 16.0
    with pytest.raises(ValueError):
        percentile(values, 0)
    reports = [NodeReport(r, 3, "steal", 100, bytes_from_storage=50, complete_s=float(r + 1)) for r in range(2)]
    s = summarize(reports, {2: "killed"})
    assert s["procs"] == 3 and s["procs_failed"] == 1 and s["origin_egress_x"] == 1.0
    assert s["completion_s"] == {"p50": 1.0, "p95": 2.0, "p99": 2.0, "max": 2.0}


def test_a_stored_piece_is_never_written_again():
    """The end game's second copy of a piece (or a GET racing a peer) is not written: the
    piece's bytes stay those first stored while peers may be reading them."""
    import threading as th

    node = RealNode.__new__(RealNode)  # only the write path: no sockets, no S3
    buf = bytearray(2000)
    node.store, node.store_lock, node.stored, node.digest = MemoryStore(buf, 2000), th.Lock(), bytearray(2), None
    node._stored(1, 1000, b"a" * 1000)
    node._stored(1, 1000, b"b" * 1000)
    assert bytes(buf[1000:]) == b"a" * 1000 and bytes(buf[:1000]) == bytes(1000)


def test_file_store_reads_back_in_order_past_the_cache(tmp_path):
    """The in-order pass over a file written with O_DIRECT reads it back with O_DIRECT in
    aligned chunks (the unaligned tail included), or through the mmap otherwise: the same bytes."""
    import mmap

    from parcomm.apps.bcast.store import FileStore

    data = np.random.default_rng(5).bytes(3 * (1 << 20) + 4321)
    layout = Layout(len(data), piece_size=1 << 20, work_pieces=1)
    store = FileStore(tmp_path / "out.bin", len(data), hashlib.sha256(data).digest(), direct=True)
    try:
        buf = memoryview(mmap.mmap(-1, 1 << 20))
        for piece in range(layout.pieces):
            start, end = layout.piece_bytes(piece)
            buf[: end - start] = data[start:end]
            assert store.write(start, buf[: end - start])
        assert b"".join(bytes(c) for c in store.chunks(0, len(data))) == data
        assert b"".join(bytes(c) for c in store.chunks(1 << 20, len(data))) == data[1 << 20 :]
        assert b"".join(bytes(c) for c in store.chunks(5, 9000)) == data[5:9000]  # unaligned: the mmap
        digest = WholeDigest(store, layout.piece_bytes, layout.pieces)
        for piece in range(layout.pieces):
            digest.mark(piece)
        assert digest.result(timeout=10) == hashlib.sha256(data).digest()
        digest.stop()
        store.commit(hashlib.sha256(data).digest())
    finally:
        store.close()
    assert (tmp_path / "out.bin").read_bytes() == data
