"""The I/O layer of ``parcomm bcast`` against a real S3 server (versitygw on
127.0.0.1): S3 client and its retries, the pacing/fault proxy, the manifest, the
output writer, the peer wire codec and the rendezvous helpers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import socket
import threading
import time
from dataclasses import replace

import pytest
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast import rendezvous as rv
from parcomm.apps.bcast.links import Link, Listener, connect_link
from parcomm.apps.bcast.output import OutputError, OutputWriter, partial_path, remove_stale_partials
from parcomm.apps.bcast.proxy import PacingProxy, parse_profile, parse_rate, rate_sampler
from parcomm.apps.bcast.s3 import (
    AccessDenied,
    InvalidS3Url,
    ObjectChanged,
    ObjectNotFound,
    RetryPolicy,
    S3Client,
    S3Config,
    S3Error,
    StorageUnavailable,
    parse_s3_url,
)
from parcomm.apps.bcast.wire import (
    PROTOCOL_VERSION,
    FrameTooLarge,
    HandshakeError,
    Hello,
    Record,
    WireError,
    decode_body,
    encode_record,
    read_record,
)
from parcomm.auth import GREETING_SIZE, JobKey
from parcomm.auth.sockets import recv_exact

# Bounded-time checks count attempts; this only catches a hang (tests check
# behaviour, not speed: the machine may be loaded).
HANG_GUARD_S = 30.0
KEY = JobKey.generate()  # this test job's shared secret
FAST_RETRY = RetryPolicy(max_attempts=30, base_delay=0.005, max_delay=0.05, total_timeout=20.0)


def _blob(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.fixture(scope="module")
def objects(versitygw, s3_bucket):
    """Objects of edge-case sizes, uploaded once: name -> (url, data)."""
    client = S3Client(versitygw.s3_config())
    made = {}
    for name, size in [("empty", 0), ("one", 1), ("odd", 1_000_003), ("two-mb", 2 * 1024 * 1024)]:
        url = f"s3://{s3_bucket}/io/{name}.bin"
        data = _blob(size, seed=size)
        client.put_bytes(url, data, metadata={"origin": "test"})
        made[name] = (url, data)
    return made


@pytest.fixture()
def client(versitygw):
    return S3Client(versitygw.s3_config(), retry=FAST_RETRY)


# -- urls and configuration ------------------------------------------------------
def test_parse_s3_url():
    assert parse_s3_url("s3://bkt/a/b/c.bin") == parse_s3_url("s3://bkt/a/b/c.bin")
    loc = parse_s3_url("s3://bkt/a/b/c.bin")
    assert (loc.bucket, loc.key, str(loc)) == ("bkt", "a/b/c.bin", "s3://bkt/a/b/c.bin")
    for bad in ["http://x/y", "s3://", "s3://bkt", "s3://bkt/", "s3:///key"]:
        with pytest.raises(InvalidS3Url, match="s3://BUCKET/KEY"):
            parse_s3_url(bad)


def test_config_from_env_precedence():
    env = {
        "AWS_ENDPOINT_URL": "http://a:1",
        "AWS_ENDPOINT_URL_S3": "http://b:2",
        "AWS_ACCESS_KEY_ID": "ak",
        "AWS_SECRET_ACCESS_KEY": "sk",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_SESSION_TOKEN": "tok",
    }
    cfg = S3Config.from_env(environ=env)
    assert (cfg.endpoint_url, cfg.access_key, cfg.secret_key, cfg.region, cfg.session_token) == (
        "http://b:2",
        "ak",
        "sk",
        "eu-west-1",
        "tok",
    )
    cfg = S3Config.from_env(endpoint_url="http://c:3", access_key="x", secret_key="y", environ=env)
    assert (cfg.endpoint_url, cfg.access_key, cfg.session_token) == ("http://c:3", "x", None)
    assert S3Config.from_env(environ={}).region == "us-east-1"


# -- head and ranged GETs ---------------------------------------------------------
def test_head(client, objects):
    for url, data in objects.values():
        info = client.head(url)
        assert info.size == len(data)
        assert info.etag and '"' not in info.etag
        assert info.metadata == {"origin": "test"}


def test_get_range_edges(client, objects):
    url, data = objects["odd"]
    n = len(data)
    for start, end in [(0, n), (0, 1), (n - 1, n), (n - 7, n), (12345, 678901), (5, 5)]:
        assert client.get_bytes(url, start, end) == data[start:end]
    one_url, one = objects["one"]
    assert client.get_bytes(one_url) == one
    empty_url, _ = objects["empty"]
    before = client.stats.requests
    assert client.get_range(empty_url, 0, 0, lambda o, d: pytest.fail("no chunk expected")) == 0
    assert client.stats.requests == before  # an empty range needs no request
    assert client.get_bytes(empty_url) == b""
    with pytest.raises(ValueError):
        client.get_range(url, 10, 5, lambda o, d: None)
    with pytest.raises(S3Error, match="beyond the end"):
        client.get_bytes(url, n - 10, n + 10)


def test_get_range_chunks_are_aligned(client, objects):
    url, data = objects["odd"]
    chunks = []
    client.get_range(url, 1000, 1000 + 10_000, lambda o, d: chunks.append((o, len(d))), chunk_size=4096)
    assert chunks == [(1000, 4096), (5096, 4096), (9192, 1808)]


def test_client_shared_by_threads(client, objects):
    url, data = objects["two-mb"]
    results: dict[int, bool] = {}

    def fetch(i: int) -> None:
        start = i * 256 * 1024
        results[i] = client.get_bytes(url, start, start + 256 * 1024) == data[start : start + 256 * 1024]

    threads = [threading.Thread(target=fetch, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == {i: True for i in range(8)}


# -- permanent errors: right exception, fast ---------------------------------------
def test_missing_object_and_bucket(client, s3_bucket):
    started = time.monotonic()
    with pytest.raises(ObjectNotFound, match=f"s3://{s3_bucket}/no/such/key"):
        client.head(f"s3://{s3_bucket}/no/such/key")
    with pytest.raises(ObjectNotFound, match="s3://no-such-bucket-x/k"):
        client.get_bytes("s3://no-such-bucket-x/k", 0, 10)
    assert client.stats.retries == 0
    assert time.monotonic() - started < HANG_GUARD_S


def test_bad_credentials(versitygw, objects):
    url, _ = objects["one"]
    bad = S3Client(replace(versitygw.s3_config(), secret_key="wrong-secret"), retry=FAST_RETRY)
    started = time.monotonic()
    with pytest.raises(AccessDenied, match=url):
        bad.head(url)
    with pytest.raises(AccessDenied, match="SignatureDoesNotMatch"):
        bad.get_bytes(url, 0, 1)
    unknown = S3Client(replace(versitygw.s3_config(), access_key="nobody"), retry=FAST_RETRY)
    with pytest.raises(AccessDenied):
        unknown.get_bytes(url, 0, 1)
    assert bad.stats.retries == 0 and time.monotonic() - started < HANG_GUARD_S


def test_changed_object_is_detected(client, s3_bucket):
    url = f"s3://{s3_bucket}/io/changing.bin"
    client.put_bytes(url, b"a" * 1000)
    info = client.head(url)
    client.put_bytes(url, b"b" * 1000)
    with pytest.raises(ObjectChanged, match=url):
        client.get_bytes(url, 0, 1000, etag=info.etag)


def test_unreachable_endpoint_gives_up_in_bounded_time(objects):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    cfg = S3Config(endpoint_url=f"http://127.0.0.1:{port}", access_key="a", secret_key="b", region="us-east-1")
    c = S3Client(
        cfg, retry=RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05, total_timeout=5.0), connect_timeout=1.0
    )
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match=r"s3://bkt/key: HEAD failed 4 times"):
        c.head("s3://bkt/key")
    assert time.monotonic() - started < HANG_GUARD_S


# -- retries through the fault proxy ------------------------------------------------
def _fetch_all(c: S3Client, url: str, size: int, unit: int, chunk: int) -> tuple[bytes, list[int]]:
    out = bytearray(size)
    offsets: list[int] = []

    def keep(offset: int, data: bytes) -> None:
        offsets.append(offset)
        out[offset : offset + len(data)] = data

    etag = c.head(url).etag
    for start in range(0, size, unit):
        c.get_range(url, start, min(size, start + unit), keep, chunk_size=chunk, etag=etag)
    return bytes(out), offsets


@pytest.mark.parametrize("error_rate", [0.1, 0.3])
def test_slowdown_503s_are_retried(versitygw, objects, error_rate):
    url, data = objects["two-mb"]
    with PacingProxy(versitygw.endpoint_url, error_rate=error_rate, fault_methods=("GET", "HEAD"), seed=7) as proxy:
        c = S3Client(versitygw.s3_config(proxy.endpoint_url), retry=FAST_RETRY, seed=1)
        got, _ = _fetch_all(c, url, len(data), unit=64 * 1024, chunk=16 * 1024)
        stats = proxy.snapshot()
    assert got == data
    assert stats.injected_errors > 0
    assert c.stats.retries == stats.injected_errors == c.stats.errors.get("SlowDown", 0)


@pytest.mark.parametrize("mode", ["drop", "short"])
def test_truncated_bodies_are_retried_and_resumed(versitygw, objects, mode):
    url, data = objects["two-mb"]
    with PacingProxy(versitygw.endpoint_url, truncate_rate=0.5, truncate_mode=mode, seed=3) as proxy:
        c = S3Client(versitygw.s3_config(proxy.endpoint_url), retry=FAST_RETRY)
        got, offsets = _fetch_all(c, url, len(data), unit=512 * 1024, chunk=32 * 1024)
        stats = proxy.snapshot()
    assert got == data
    assert stats.truncated > 0 and c.stats.retries >= stats.truncated
    # Each chunk was delivered exactly once although requests were cut and resumed.
    assert offsets == list(range(0, len(data), 32 * 1024))
    # Resuming re-fetches at most one partial chunk per cut, not the whole range.
    assert stats.bytes_served <= len(data) + stats.truncated * (32 * 1024 + 512 * 1024)


def test_retry_budget_is_bounded(versitygw, objects):
    url, _ = objects["one"]
    with PacingProxy(versitygw.endpoint_url, error_rate=1.0, seed=1) as proxy:
        c = S3Client(
            versitygw.s3_config(proxy.endpoint_url),
            retry=RetryPolicy(max_attempts=5, base_delay=0.01, max_delay=0.02, total_timeout=5.0),
        )
        started = time.monotonic()
        with pytest.raises(StorageUnavailable, match=rf"{url}: GET bytes 0-0 failed 5 times.*SlowDown"):
            c.get_bytes(url, 0, 1)
        assert time.monotonic() - started < HANG_GUARD_S
        assert proxy.snapshot().injected_errors == 5


def test_stalled_server_times_out_and_is_retried(versitygw, objects):
    url, data = objects["one"]
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 1e9)], first_byte_latency=0.6) as proxy:
        c = S3Client(
            versitygw.s3_config(proxy.endpoint_url),
            read_timeout=0.2,
            retry=RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, total_timeout=5.0),
        )
        started = time.monotonic()
        with pytest.raises(StorageUnavailable, match="ReadTimeout"):
            c.get_bytes(url, 0, 1)
        assert time.monotonic() - started < HANG_GUARD_S and c.stats.retries == 1


def test_callback_errors_are_not_retried(client, objects):
    url, _ = objects["odd"]

    def disk_full(offset: int, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        client.get_range(url, 0, 100_000, disk_full)
    assert client.stats.retries == 0 and client.stats.requests == 1


def test_full_jitter_backoff_is_bounded():
    policy = RetryPolicy(base_delay=0.1, max_delay=1.0)
    rng = random.Random(0)
    for failures in range(1, 12):
        cap = min(1.0, 0.1 * 2 ** (failures - 1))
        delays = [policy.delay(failures, rng) for _ in range(200)]
        assert all(0 <= d <= cap for d in delays)
        assert max(delays) > cap * 0.8  # full jitter spans the whole interval


# -- pacing --------------------------------------------------------------------------
def test_proxy_paces_and_counts(versitygw, objects):
    url, data = objects["two-mb"]
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 4e6)], first_byte_latency=0.05) as proxy:
        c = S3Client(versitygw.s3_config(proxy.endpoint_url), retry=FAST_RETRY)
        c.head(url)
        started = time.monotonic()
        assert c.get_bytes(url, 0, 1_000_000) == data[:1_000_000]
        elapsed = time.monotonic() - started
        stats = proxy.snapshot()
    # 1 MB at 4 MB/s (minus the first slice, sent at once) plus 50 ms first-byte latency.
    assert elapsed >= 0.25, elapsed  # paced (a lower bound: a loaded machine only adds time)
    assert (stats.requests, stats.get_requests, stats.bytes_served, stats.rates) == (2, 1, 1_000_000, [4e6])


def test_proxy_aggregate_rate_is_shared(versitygw, objects):
    url, data = objects["two-mb"]
    with PacingProxy(versitygw.endpoint_url, aggregate_rate=4e6) as proxy:
        c = S3Client(versitygw.s3_config(proxy.endpoint_url), retry=FAST_RETRY)
        c.get_bytes(url, 0, 1)  # warm up the client outside the timing
        results: list[bool] = []
        started = time.monotonic()
        threads = [
            threading.Thread(
                target=lambda s=s: results.append(c.get_bytes(url, s, s + 600_000) == data[s : s + 600_000])
            )
            for s in (0, 1_000_000)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        elapsed = time.monotonic() - started
    assert results == [True, True]
    assert elapsed >= 0.2, elapsed  # 1.2 MB through one 4 MB/s link, not two (0.15 s)


def test_proxy_passes_puts_through(versitygw, s3_bucket):
    with PacingProxy(versitygw.endpoint_url, error_rate=1.0) as proxy:  # faults hit GETs only
        c = S3Client(versitygw.s3_config(proxy.endpoint_url), retry=FAST_RETRY)
        url = f"s3://{s3_bucket}/io/through-proxy.bin"
        c.put_bytes(url, b"x" * 70_000)
        assert c.head(url).size == 70_000


def test_proxy_command_line(versitygw, objects):
    import signal
    import subprocess
    import sys

    url, data = objects["one"]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "parcomm.apps.bcast.proxy",
            "--upstream",
            versitygw.endpoint_url,
            "--profile",
            "1:10MB",
            "--error-rate",
            "0.5",
            "--seed",
            "1",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline().split()
        assert first[0] == "proxy" and first[1].startswith("http://127.0.0.1:"), first
        c = S3Client(versitygw.s3_config(first[1]), retry=FAST_RETRY)
        assert c.get_bytes(url, 0, 1) == data
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
    stats = json.loads(out.strip().splitlines()[-1])
    assert proc.returncode == 0 and stats["bytes_served"] == 1 and stats["injected_errors"] == c.stats.retries


def test_profiles():
    assert parse_rate("10MB") == 10e6 and parse_rate("512KiB") == 512 * 1024 and parse_rate("2e6") == 2e6
    assert parse_profile("0.6:5MB,0.4:10MB/s") == [(0.6, 5e6), (0.4, 10e6)]
    paper = parse_profile("paper")  # the simulator's chiba2010 modes: 3.5-6, 6-8, 8-11 MB/s
    rates = [paper(random.Random(seed)) for seed in range(2000)]
    assert 3.5e6 <= min(rates) and max(rates) <= 11e6 and 0.55 < sum(r <= 6e6 for r in rates) / 2000 < 0.65
    with pytest.raises(ValueError):
        parse_profile("5MB")
    draw = rate_sampler([(0.75, 1.0), (0.25, 2.0)])
    rng = random.Random(42)
    draws = [draw(rng) for _ in range(4000)]
    assert 0.72 < draws.count(1.0) / 4000 < 0.78
    assert rate_sampler(lambda r: 3.0)(rng) == 3.0 and rate_sampler(None)(rng) is None


# -- manifest -------------------------------------------------------------------------
def test_manifest_prepare_load_verify(client, objects):
    url, data = objects["odd"]
    piece = 64 * 1024
    made = mf.prepare(url, piece, client=client, fetch_size=300_000)  # fetch rounded to whole pieces
    assert made.num_pieces == -(-len(data) // piece) and made.sha256 == hashlib.sha256(data).digest()
    sidecar = json.loads(client.get_bytes(mf.sidecar_url(url)))
    assert sidecar["sha256"] == hashlib.sha256(data).hexdigest() and sidecar["piece_size"] == piece
    loaded = mf.load(url, client=client)
    assert loaded == made
    for i in (0, 5, made.num_pieces - 1):
        start, end = loaded.piece_range(i)
        assert mf.verify_piece(loaded, i, data[start:end])
        assert not mf.verify_piece(loaded, i, b"\0" + data[start + 1 : end])
    assert not mf.verify_piece(loaded, 0, data[: piece - 1])  # wrong length
    assert not mf.verify_piece(loaded, made.num_pieces, b"")  # no such piece


@pytest.mark.parametrize("name", ["empty", "one"])
def test_manifest_tiny_objects(client, objects, name):
    url, data = objects[name]
    made = mf.prepare(url, 32 * 1024, client=client)
    assert made.num_pieces == len(data) and mf.load(url, client=client) == made
    assert made.sha256 == hashlib.sha256(data).digest()


def test_manifest_missing_and_stale(client, s3_bucket):
    url = f"s3://{s3_bucket}/io/manifest-stale.bin"
    client.put_bytes(url, _blob(100_000, 1))
    with pytest.raises(mf.ManifestError, match=rf"not found.*parcomm bcast prepare {url}"):
        mf.load(url, client=client)
    mf.prepare(url, 32 * 1024, client=client)
    client.put_bytes(url, _blob(100_000, 2))  # same size, new content: new ETag
    with pytest.raises(mf.ManifestError, match=rf"stale hash list.*parcomm bcast prepare {url}"):
        mf.load(url, client=client)
    client.put_bytes(mf.sidecar_url(url), b"{not json")
    with pytest.raises(mf.ManifestError, match="unreadable"):
        mf.load(url, client=client)


# -- output writer ----------------------------------------------------------------------
def _pieces(data: bytes, size: int) -> list[tuple[int, bytes]]:
    return [(o, data[o : o + size]) for o in range(0, len(data), size)]


def test_output_commit(tmp_path):
    data = _blob(100_001)
    target = tmp_path / "out.bin"
    with OutputWriter(target, len(data), hashlib.sha256(data).digest()) as out:
        # Hidden, next to the target, unguessable (random), then this host, this pid and its
        # start time; mode 0600 until published.
        assert out.temp_path.parent == tmp_path and out.temp_path != partial_path(target)
        assert out.temp_path.name.startswith(".out.bin.parcomm-partial-")
        assert f"-{os.getpid()}-" in out.temp_path.name
        assert out.temp_path.stat().st_mode & 0o777 == 0o600
        assert out.temp_path.stat().st_size == len(data)  # pre-sized
        assert not target.exists()
        for offset, piece in reversed(_pieces(data, 4096)):
            out.write_piece(offset, piece)
        out.commit()
    assert target.read_bytes() == data and out.committed
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert list(tmp_path.iterdir()) == [target]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_output_direct_writes_aligned_pieces_past_the_cache_and_the_rest_through_it(tmp_path):
    """--verify pieces writes with O_DIRECT where the filesystem allows: aligned pieces from an
    aligned buffer go to the disk, anything else (the unaligned tail, a bytes object) through
    the page cache; either way the file holds exactly the object."""
    import mmap

    from parcomm.apps.bcast.output import DIRECT_ALIGN, filesystem_type

    piece = 4 * DIRECT_ALIGN
    data = _blob(5 * piece + 1234)
    target = tmp_path / "out.bin"
    with OutputWriter(target, len(data), hashlib.sha256(data).digest(), direct=True) as out:
        local_disk = filesystem_type(tmp_path) in ("ext4", "xfs", "btrfs", "f2fs")
        assert out.direct == local_disk  # never on tmpfs, network or FUSE filesystems
        aligned = memoryview(mmap.mmap(-1, piece))  # page-aligned, as the receivers' buffers are
        for offset, chunk in reversed(_pieces(data, piece)):
            if offset == piece:
                out.write_piece(offset, chunk)  # bytes: maybe unaligned in memory, still written
                continue
            aligned[: len(chunk)] = chunk
            out.write_piece(offset, aligned[: len(chunk)])
        out.commit()
    assert target.read_bytes() == data
    assert list(tmp_path.iterdir()) == [target]


def test_filesystem_type_of_a_path():
    from parcomm.apps.bcast.output import filesystem_type

    assert filesystem_type("/proc/self") == "proc"
    assert filesystem_type("/") not in (None, "proc")


def test_output_zero_bytes(tmp_path):
    target = tmp_path / "empty.bin"
    with OutputWriter(target, 0, hashlib.sha256(b"").digest()) as out:
        out.commit()
    assert target.read_bytes() == b""


def test_output_aborted_leaves_nothing(tmp_path):
    data = _blob(50_000)
    target = tmp_path / "out.bin"
    with pytest.raises(RuntimeError):
        with OutputWriter(target, len(data), hashlib.sha256(data).digest()) as out:
            out.write_piece(0, data[:10_000])
            raise RuntimeError("transfer failed")
    assert list(tmp_path.iterdir()) == []
    # Forgetting to commit is an abort too, and an existing PATH is left as it was.
    target.write_bytes(b"previous")
    with OutputWriter(target, len(data), None) as out:
        out.write_piece(0, data)
    assert list(tmp_path.iterdir()) == [target] and target.read_bytes() == b"previous"


def test_output_digest_mismatch_is_not_published(tmp_path):
    data = _blob(10_000)
    target = tmp_path / "out.bin"
    out = OutputWriter(target, len(data), hashlib.sha256(data).digest())
    out.write_piece(0, data[:5000])
    out.write_piece(5000, b"\0" * 5000)
    with pytest.raises(OutputError, match="does not match"):
        out.commit()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OutputError, match="outside"):
        OutputWriter(target, 10, None).write_piece(5, b"123456")


def test_remove_stale_partials(tmp_path):
    target = tmp_path / "out.bin"
    dead = partial_path(target, pid=2**22 + 12345)  # above pid_max on common systems
    dead.write_bytes(b"x")
    mine = partial_path(target)
    mine.write_bytes(b"y")
    assert remove_stale_partials(target) == [dead]
    assert mine.exists()


# -- wire codec ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "record",
    [
        Record(0),
        Record(7, (1, 2, 3)),
        Record(0xFFFF, (-1, 2**63 - 1, -(2**63)), b""),
        Record(3, (42,), b"piece-bytes" * 100),
        Record(4, tuple(range(64)), None),
    ],
)
def test_wire_round_trip(record):
    frame = encode_record(record)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert decode_body(frame[4:]) == record


def test_wire_rejects_bad_records_and_frames():
    for bad in [Record(-1), Record(1 << 16), Record(1, (2**63,)), Record(1, tuple(range(65)))]:
        with pytest.raises(WireError):
            encode_record(bad)
    frame = encode_record(Record(1, (5,), b"abc"))
    for body in [frame[4:7], frame[4:10], b"\x00\x01\x00\x00\x80", encode_record(Record(1))[4:] + b"x"]:
        with pytest.raises(WireError):
            decode_body(body)

    async def read(raw: bytes, max_payload: int):
        reader = asyncio.StreamReader()
        reader.feed_data(raw)
        reader.feed_eof()
        return [await read_record(reader, max_payload) for _ in range(2)]

    assert asyncio.run(read(frame, 3)) == [Record(1, (5,), b"abc"), None]
    with pytest.raises(FrameTooLarge, match="exceeds the limit"):
        asyncio.run(read(encode_record(Record(1, (), b"x" * 5000)), 4096 - 600))
    with pytest.raises(WireError, match="inside a frame"):
        asyncio.run(read(frame[:-1], 3))


def _run(coro, timeout: float = 15.0):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def _recv_record(link: Link) -> Record | None:
    head = link.recv_head()
    if head is None:
        return None
    type_code, fields, payload_len = head
    if payload_len is None:
        return Record(type_code, fields, None)
    buf = bytearray(payload_len)  # recv_into: also takes a piece's payload (checked by content, not by tag)
    link.recv_into(memoryview(buf))
    return Record(type_code, fields, bytes(buf))


def test_peer_link_and_handshake():
    hello = Hello(rank=0, etag="abc", size=10_000, piece_size=4096)
    received: list[Record | None] = []
    refused: list[str] = []
    served = threading.Event()

    def on_link(link: Link) -> None:
        if link.rank != 1:  # rank 3 below: this side accepts, the connecting side refuses
            link.close()
            return
        received.append(_recv_record(link))
        link.send_record(Record(2, (link.rank,), b"ok"))
        received.append(_recv_record(link))
        link.close()
        served.set()

    sock = _listening()
    port = sock.getsockname()[1]
    listener = Listener(sock, hello, 4096, KEY, on_link, on_refused=refused.append)
    try:
        link = connect_link("127.0.0.1", port, replace(hello, rank=1), 4096, KEY, expect_rank=0)
        link.send_record(Record(1, (9,), b"p" * 4096))
        assert _recv_record(link) == Record(2, (1,), b"ok")
        link.close()
        assert served.wait(HANG_GUARD_S)
        for other, why in [
            (replace(hello, rank=2, etag="other"), "etag"),
            (replace(hello, rank=2, version=PROTOCOL_VERSION + 1), "protocol version"),
            (replace(hello, rank=0), "same rank"),
        ]:
            with pytest.raises(HandshakeError, match=why):
                connect_link("127.0.0.1", port, other, 4096, KEY)
        with pytest.raises(HandshakeError, match="expected 5"):
            connect_link("127.0.0.1", port, replace(hello, rank=3), 4096, KEY, expect_rank=5)
        # Something that is not a parcomm node: once it speaks it gets our random greeting, then is dropped; it
        # never sees the Hello (ETag, size, piece size).
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"GET / HTTP/1.1\r\n\r\n" + b"\0" * 64)  # the listener waits for a first byte
            seen = recv_exact(raw, GREETING_SIZE)
            try:
                while chunk := raw.recv(4096):
                    seen += chunk
            except ConnectionResetError:
                pass  # dropped with our bytes unread: a reset instead of an orderly close
        assert len(seen) == GREETING_SIZE and b"abc" not in seen
        # A parcomm node of another job (another key) is refused before any Hello.
        with pytest.raises(HandshakeError, match="not a member of this job"):
            connect_link("127.0.0.1", port, replace(hello, rank=2), 4096, JobKey.generate())
        deadline = time.monotonic() + HANG_GUARD_S
        while len(refused) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        listener.stop()
        sock.close()
    assert received == [Record(1, (9,), b"p" * 4096), None]
    assert len(refused) == 4  # the members of other broadcasts or ranks; outsiders never reach the Hello


def test_hello_carries_the_listening_address_and_refuses_a_bad_one():
    ours = Hello(rank=3, etag="e", size=5, piece_size=4, listen=("10.0.0.7", 40123))
    a, b = socket.socketpair()
    with a, b:
        a.sendall(ours.encode())
        assert Hello.read_from(b, time.monotonic() + 5) == ours
    for bad in [("h" * 256, 1), ("h", 70000)]:
        with pytest.raises(WireError, match="listening address"):
            replace(ours, listen=bad).encode()


def test_peer_link_refuses_oversized_frames():
    hello = Hello(rank=0, etag="e", size=1, piece_size=1024)
    outcome: list[BaseException] = []
    done = threading.Event()

    def on_link(link: Link) -> None:
        try:
            link.recv_head()
        except WireError as exc:
            outcome.append(exc)
        link.close()
        done.set()

    sock = _listening()
    listener = Listener(sock, hello, 1024, KEY, on_link)
    try:
        # A misconfigured sender: its own limit allows what ours refuses.
        link = connect_link("127.0.0.1", sock.getsockname()[1], replace(hello, rank=1), 1 << 20, KEY)
        link.send_record(Record(1, (), b"x" * 100_000))
        assert done.wait(HANG_GUARD_S)
        link.close()
    finally:
        listener.stop()
        sock.close()
    assert len(outcome) == 1 and isinstance(outcome[0], FrameTooLarge)


def test_peer_link_moves_payloads_from_files_and_buffers(tmp_path):
    """sendfile from a file and sendall from a buffer both arrive as one frame each."""
    hello = Hello(rank=0, etag="e", size=1 << 20, piece_size=1 << 20)
    blob = _blob(1 << 20, 3)
    path = tmp_path / "blob"
    path.write_bytes(blob)
    got: list[Record | None] = []
    done = threading.Event()

    def on_link(link: Link) -> None:
        got.extend(_recv_record(link) for _ in range(3))
        done.set()

    sock = _listening()
    listener = Listener(sock, hello, 1 << 20, KEY, on_link)
    try:
        link = connect_link("127.0.0.1", sock.getsockname()[1], replace(hello, rank=1), 1 << 20, KEY)
        fd = os.open(path, os.O_RDONLY)
        try:
            link.send_file(4, (7,), fd, 1000, 5000)
        finally:
            os.close(fd)
        link.send_view(4, (8,), memoryview(blob)[10:20])
        link.close()
        assert done.wait(HANG_GUARD_S)
    finally:
        listener.stop()
        sock.close()
    assert got == [Record(4, (7,), blob[1000:6000]), Record(4, (8,), blob[10:20]), None]


# -- rendezvous ---------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_rendezvous_via_address_4_nodes():
    address = ("127.0.0.1", _free_port())
    endpoints = [("127.0.0.1", 40000 + r) for r in range(4)]

    async def scenario():
        others = [
            asyncio.create_task(rv.via_address(r, 4, address, endpoints[r], key=KEY, job="j", timeout=10))
            for r in (1, 2, 3)
        ]
        await asyncio.sleep(0.2)  # the others start first and retry until rank 0 listens
        root = await rv.via_address(0, 4, address, endpoints[0], key=KEY, job="j", timeout=10)
        return [root] + [await t for t in others]

    tables = _run(scenario())
    assert all(t == endpoints for t in tables)


def test_rendezvous_via_address_refusals_and_timeout():
    address = ("127.0.0.1", _free_port())

    async def scenario():
        root = asyncio.create_task(rv.via_address(0, 3, address, ("h", 1), key=KEY, job="j", timeout=1.5))
        await asyncio.sleep(0.1)
        with pytest.raises(rv.RendezvousError, match="another broadcast") as refused:
            await rv.via_address(1, 3, address, ("h", 2), key=KEY, job="other", timeout=5)
        assert "'j'" not in str(refused.value)  # rank 0's job name is not given away
        with pytest.raises(rv.RendezvousError, match="world size 4"):
            await rv.via_address(1, 4, address, ("h", 2), key=KEY, job="j", timeout=5)
        # Another key: retried until its own deadline (it could be a flood shedding us), then said.
        with pytest.raises(
            rv.RendezvousError, match="could not register.*no handshake.*after our proof.*it holds a different key"
        ):
            await rv.via_address(1, 3, address, ("h", 2), key=JobKey.generate(), job="j", timeout=0.5)
        with pytest.raises(rv.RendezvousError, match="timed out.*2 of 3 ranks missing"):
            await root

    started = time.monotonic()
    _run(scenario())
    assert time.monotonic() - started < HANG_GUARD_S
    with pytest.raises(rv.RendezvousError, match="could not register.*cannot connect"):
        _run(rv.via_address(1, 2, ("127.0.0.1", _free_port()), ("h", 2), key=KEY, timeout=0.5))


def test_rendezvous_via_directory_4_nodes(tmp_path):
    (tmp_path / "rank-3.json").write_text(json.dumps({"rank": 3, "world": 4, "host": "stale", "port": 1, "job": "old"}))
    # Someone without the key writes a plausible entry for rank 1 first: it is ignored
    # (rank 1's own write replaces it here; a forged entry with a bad MAC is never believed).
    forged = {"rank": 1, "world": 4, "host": "evil", "port": 6666, "job": "new", "mac": "00" * 32}
    (tmp_path / "rank-1.json").write_text(json.dumps(forged))
    endpoints = [("127.0.0.1", 41000 + r) for r in range(4)]
    tables: dict[int, list] = {}

    def node(rank: int) -> None:
        time.sleep(0.05 * rank)
        tables[rank] = rv.via_directory(tmp_path, rank, 4, endpoints[rank], key=KEY, job="new", timeout=10)

    threads = [threading.Thread(target=node, args=(r,)) for r in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=15)
    assert tables == {r: endpoints for r in range(4)}
    with pytest.raises(rv.RendezvousError, match="1 of 2 ranks missing"):
        rv.via_directory(tmp_path / "alone", 0, 2, endpoints[0], key=KEY, timeout=0.3)


def test_local_sockets_carry_peer_traffic():
    socks = rv.reserve_local_sockets(4)
    table = rv.local_table(socks)
    assert len({port for _, port in table}) == 4 and all(h == "127.0.0.1" for h, _ in table)
    hello = Hello(rank=0, etag="e", size=8, piece_size=8)
    got: list[int] = []

    def on_link(link: Link) -> None:
        got.append(link.rank)
        link.close()

    listeners = [Listener(s, replace(hello, rank=r), 8, KEY, on_link) for r, s in enumerate(socks)]
    try:
        for r, (host, port) in enumerate(table):
            connect_link(host, port, replace(hello, rank=(r + 1) % 4), 8, KEY, expect_rank=r).close()
        deadline = time.monotonic() + HANG_GUARD_S
        while len(got) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(got) == [0, 1, 2, 3]
    finally:
        for listener in listeners:
            listener.stop()
        for s in socks:
            s.close()
