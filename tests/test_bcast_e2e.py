"""``parcomm bcast`` end to end: real node processes, real TCP between them,
a real S3 server (versitygw on 127.0.0.1), the pacing/fault proxy in front
of it for the fault tests. Every output is checked byte for byte (sha256)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast.launch import Job, run_local
from parcomm.apps.bcast.node import BcastConfig
from parcomm.apps.bcast.proxy import PacingProxy
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.summary import summarize
from parcomm.auth import JobKey

PIECE = 64 * 1024  # small pieces so small objects still have many pieces and works
WORK = 3  # pieces per work: odd, so object sizes rarely align with works


def _blob(size: int, seed: int) -> bytes:
    return np.random.default_rng(seed).bytes(size)


@pytest.fixture(scope="module")
def s3(versitygw, s3_bucket):
    """Upload objects on demand (with their hash lists): size -> (url, sha256)."""
    client = S3Client(versitygw.s3_config())
    made: dict[int, tuple[str, str]] = {}

    def put(size: int) -> tuple[str, str]:
        if size not in made:
            url = f"s3://{s3_bucket}/e2e/obj-{size}.bin"
            data = _blob(size, size)
            client.put_bytes(url, data)
            mf.prepare(url, PIECE, client=client)
            made[size] = (url, hashlib.sha256(data).hexdigest())
        return made[size]

    return put


def _job(gw, url: str, out: Path, algo: str, endpoint: str | None = None, **kw) -> Job:
    cfg = BcastConfig(
        piece_size=PIECE,
        work_pieces=WORK,
        s3_connections=2,
        peers=3,
        choke_interval=0.5,
        stall_timeout=5.0,
        orphan_timeout=2.0,
    )
    return Job(url, str(out / "out.{rank}"), algo, cfg, gw.s3_config(endpoint), timeout=120, linger=10, **kw)


def _check(result, out: Path, nodes: int, digest: str, skip: tuple[int, ...] = ()) -> None:
    for rank in range(nodes):
        if rank in skip:
            continue
        path = out / f"out.{rank}"
        assert path.exists(), f"node {rank}: no output ({result.errors.get(rank)})"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"node {rank}: wrong bytes"
    if not skip:
        assert not [p.name for p in out.iterdir() if "parcomm-partial" in p.name]


SIZES = {"empty": 0, "one-byte": 1, "one-piece": PIECE, "odd": 5 * PIECE * WORK + 12345}


@pytest.mark.parametrize("algo", ["flat", "nonsteal", "steal"])
@pytest.mark.parametrize("size", list(SIZES))
def test_four_nodes_every_size(versitygw, s3, tmp_path, algo, size):
    url, digest = s3(SIZES[size])
    result = run_local(_job(versitygw, url, tmp_path, algo), 4)
    assert result.errors == {}
    _check(result, tmp_path, 4, digest)
    kept = sum(r.storage_bytes_kept for r in result.reports)
    assert kept == (4 if algo == "flat" else 1) * SIZES[size]  # the protocol fetches each byte once
    # Measured off the sockets: at least that. A GET in flight when its work was taken over
    # (steal, end game) still costs its bytes: seen once here, a 1-byte object read twice.
    egress = sum(r.bytes_from_storage for r in result.reports)
    assert kept <= egress <= kept + 4 * PIECE * WORK


@pytest.mark.parametrize("algo", ["flat", "nonsteal", "steal"])
@pytest.mark.parametrize("nodes", [1, 8])
def test_one_and_eight_nodes(versitygw, s3, tmp_path, algo, nodes):
    size = 11 * PIECE * WORK + 777
    url, digest = s3(size)
    result = run_local(_job(versitygw, url, tmp_path, algo), nodes)
    assert result.errors == {}
    _check(result, tmp_path, nodes, digest)
    egress = sum(r.bytes_from_storage for r in result.reports)
    if algo == "flat":
        assert egress == nodes * size
    else:
        assert egress <= 1.05 * size


def test_sixteen_nodes_open_connections_on_first_need(versitygw, s3, tmp_path):
    """16 local node processes: each opens connections only to the ranks it sends
    to -- its overlay rank ± 2^k (7 ranks of 15), where notices, steals and exchange
    neighbours go, plus at most one more (a neighbour past the overlay once it is used
    up, or a repair next to a rank counted out on a busy machine): 2 log2 N -- not to
    every other node; every output's sha256 checked."""
    nodes = 16
    size = 40 * PIECE * WORK + 4321
    url, digest = s3(size)
    result = run_local(_job(versitygw, url, tmp_path, "steal"), nodes)
    assert result.errors == {}
    _check(result, tmp_path, nodes, digest)
    opened = {r.rank: r.connections for r in result.reports}
    assert len(opened) == nodes and all(0 < c <= 2 * 4 for c in opened.values()), opened
    total = summarize(result.reports)["peer_connections"]
    assert total == sum(opened.values()) <= 2 * nodes * 4 < nodes * (nodes - 1)


def test_503s_from_storage_are_survived(versitygw, s3, tmp_path):
    size = 8 * PIECE * WORK + 99
    url, digest = s3(size)
    with PacingProxy(versitygw.endpoint_url, error_rate=0.10, seed=7) as proxy:
        result = run_local(_job(versitygw, url, tmp_path, "steal", endpoint=proxy.endpoint_url), 4)
        stats = proxy.snapshot()
    assert result.errors == {}
    _check(result, tmp_path, 4, digest)
    assert stats.injected_errors > 0  # the faults really happened
    assert sum(r.storage_retries for r in result.reports) >= stats.injected_errors - 1


@pytest.mark.parametrize("verify", ["whole", "pieces"])
def test_corrupting_peer_is_caught(versitygw, s3, tmp_path, verify):
    size = 10 * PIECE * WORK + 5
    url, digest = s3(size)
    job = _job(versitygw, url, tmp_path, "steal", faults={1: ["corrupt-uploads"]}, verify=verify)
    result = run_local(job, 4)
    honest = [r for r in result.reports if r.rank != 1]
    assert len(honest) == 3, result.errors
    _check(result, tmp_path, 4, digest, skip=(1,))  # the liar's own fate does not matter
    assert sum(r.bad_pieces for r in honest) > 0  # its lies reached someone and were refused
    assert all(1 in r.peers_dropped for r in honest if r.bad_pieces)
    assert {r.verify for r in honest} == {verify}


@pytest.mark.parametrize("verify,write", [("whole", "cached"), ("pieces", "direct"), ("whole", "direct")])
def test_both_verify_modes_deliver_the_object_and_say_which_ran(versitygw, s3, tmp_path, verify, write):
    size = 9 * PIECE * WORK + 4321
    url, digest = s3(size)
    result = run_local(_job(versitygw, url, tmp_path, "steal", verify=verify, write=write), 4)
    assert result.errors == {}
    _check(result, tmp_path, 4, digest)
    assert [(r.verify, r.write) for r in result.reports] == [(verify, write)] * 4
    assert summarize(result.reports)["verify"] == verify and summarize(result.reports)["write"] == write


def test_the_cli_offers_what_a_node_accepts():
    """The CLI keeps its own copy of the choices (it starts without the data plane)."""
    from parcomm.apps.bcast import real
    from parcomm.cli import bcast as cli_bcast

    assert cli_bcast.VERIFY_MODES == real.VERIFY_MODES and cli_bcast.WRITE_MODES == real.WRITE_MODES


@pytest.mark.parametrize("verify", ["whole", "pieces"])
def test_a_piece_storage_serves_wrong_is_refused_and_nothing_is_published(versitygw, s3, tmp_path, verify):
    """Storage's bytes of one piece do not match the hash list (a corrupted disk, a
    tampered object under the same ETag): every GET of that piece is refused, the
    node gives up, and no output appears -- under --verify pieces too."""
    size = 4 * PIECE * WORK + 77
    url, digest = s3(size)
    good = mf.load(url, client=S3Client(versitygw.s3_config()))
    pieces = list(good.piece_digests)
    pieces[5] = bytes(b ^ 0xFF for b in pieces[5])
    lying = tmp_path / "lying.parcomm.json"
    lying.write_text(mf.Manifest(good.size, good.etag, good.piece_size, tuple(pieces), good.sha256).to_json())
    out = tmp_path / "out"
    out.mkdir()
    job = _job(versitygw, url, out, "steal", manifest_url=str(lying), verify=verify)
    result = run_local(job, 1)
    assert 0 in result.errors and not result.reports, result.errors
    assert "bad pieces" in result.errors[0], result.errors
    assert list(out.iterdir()) == []  # neither the output nor a partial file


def _paced_env(gw, proxy) -> dict:
    """The environment of hand-started nodes: S3 through the pacing proxy, one shared job key."""
    return {
        **os.environ,
        **gw.environ(),
        "AWS_ENDPOINT_URL_S3": proxy.endpoint_url,
        "PARCOMM_JOB_KEY": JobKey.generate().hex(),
    }


def test_killed_node_does_not_stop_the_others(versitygw, s3, tmp_path):
    """Four independent `parcomm bcast` processes meet in a directory; one is
    killed mid-transfer (storage paced so the transfer takes seconds)."""
    size = 24 * PIECE * WORK
    url, digest = s3(size)
    meet = tmp_path / "meet"
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 2e5)], seed=1) as proxy:  # 200 kB/s per GET: seconds
        env = _paced_env(versitygw, proxy)  # four hand-started members share one key
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "parcomm",
                    "bcast",
                    url,
                    "--out",
                    str(tmp_path / f"out.{r}"),
                    "--rendezvous-dir",
                    str(meet),
                    "--rank",
                    str(r),
                    "--nodes",
                    "4",
                    "--algo",
                    "steal",
                    "--work-pieces",
                    str(WORK),
                    "--timeout",
                    "120s",
                    "--json",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for r in range(4)
        ]
        try:
            # Kill rank 3 once it has met the others and started writing its output.
            deadline = time.monotonic() + 90
            while not list(tmp_path.glob(".out.3.parcomm-partial-*")) and time.monotonic() < deadline:
                assert procs[3].poll() is None, procs[3].communicate()
                time.sleep(0.05)
            time.sleep(0.5)
            assert procs[3].poll() is None, "rank 3 finished before it could be killed"
            procs[3].send_signal(signal.SIGKILL)  # our own child, by pid
            outs = [p.communicate(timeout=150) for p in procs[:3]]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    for rank, (stdout, stderr) in enumerate(outs):
        assert procs[rank].returncode == 0, stderr.decode()[-2000:]
        report = json.loads(stdout)["nodes"][0]
        assert 3 in report["peers_lost"]
        path = tmp_path / f"out.{rank}"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert not (tmp_path / "out.3").exists()


def test_crashed_node_restarted_rejoins_and_fetches_from_the_others(versitygw, s3, tmp_path):
    """Rank 3 is killed mid-transfer and started again with the same command: it
    registers a new port, is readmitted by the others (they learn its new address
    from its Hello), and gets the object from them; its share, already adopted by
    its heir, is not fetched twice."""
    size = 24 * PIECE * WORK
    url, digest = s3(size)
    meet = tmp_path / "meet"
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 2e5)], seed=2) as proxy:  # 200 kB/s per GET: seconds
        env = _paced_env(versitygw, proxy)

        def node(rank: int) -> subprocess.Popen:
            argv = [sys.executable, "-m", "parcomm", "bcast", url, "--out", str(tmp_path / f"out.{rank}")]
            argv += ["--rendezvous-dir", str(meet), "--rank", str(rank), "--nodes", "4", "--algo", "steal"]
            argv += ["--work-pieces", str(WORK), "--timeout", "120s", "--json"]
            return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        procs = [node(r) for r in range(4)]
        try:
            deadline = time.monotonic() + 90
            while not list(tmp_path.glob(".out.3.parcomm-partial-*")) and time.monotonic() < deadline:
                assert procs[3].poll() is None, procs[3].communicate()
                time.sleep(0.05)
            time.sleep(0.3)
            assert procs[3].poll() is None, "rank 3 finished before it could be killed"
            procs[3].send_signal(signal.SIGKILL)  # our own child, by pid
            procs[3].wait()
            procs[3] = node(3)  # the same command again: a restart
            outs = [p.communicate(timeout=150) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
    reports = []
    for rank, (stdout, stderr) in enumerate(outs):
        assert procs[rank].returncode == 0, stderr.decode()[-2000:]
        reports.append(json.loads(stdout)["nodes"][0])
        assert hashlib.sha256((tmp_path / f"out.{rank}").read_bytes()).hexdigest() == digest
    restarted = reports[3]
    assert restarted["bytes_from_peers"] >= size // 2, restarted  # from the others, not only storage
    assert all(3 not in r["peers_lost"] for r in reports[:3])  # readmitted
    assert not [p.name for p in tmp_path.iterdir() if "parcomm-partial" in p.name]  # the killed one's swept


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "parcomm", "bcast", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_missing_object_is_one_clear_error_naming_every_node(versitygw, s3_bucket, tmp_path):
    env = {**os.environ, **versitygw.environ()}
    run = _cli(f"s3://{s3_bucket}/no/such.bin", "--out", str(tmp_path / "x"), "--local", "3", env=env)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr + run.stdout
    # one line for the failure, naming every node it happened on (not one line per node)
    lines = [ln for ln in run.stderr.splitlines() if "not found" in ln.lower()]
    assert len(lines) == 1 and "nodes 0-2" in lines[0], run.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_credentials_are_a_clear_error(versitygw, s3, tmp_path):
    url, _ = s3(1)
    env = {**os.environ, **versitygw.environ(), "AWS_SECRET_ACCESS_KEY": "wrong-secret"}
    run = _cli(url, "--out", str(tmp_path / "x"), "--local", "2", env=env)
    assert run.returncode != 0
    assert "Traceback" not in run.stderr + run.stdout
    assert "denied" in (run.stdout + run.stderr).lower() or "credential" in (run.stdout + run.stderr).lower()
    assert list(tmp_path.iterdir()) == []


def test_missing_hash_list_says_how_to_make_it(versitygw, s3_bucket, tmp_path):
    client = S3Client(versitygw.s3_config())
    url = f"s3://{s3_bucket}/e2e/unprepared.bin"
    client.put_bytes(url, b"abc")
    run = _cli(url, "--out", str(tmp_path / "x"), "--local", "1", env={**os.environ, **versitygw.environ()})
    assert run.returncode != 0 and "parcomm bcast prepare" in run.stdout + run.stderr
    prep = _cli("prepare", url, "--piece-size", "1KiB", "--json", env={**os.environ, **versitygw.environ()})
    assert prep.returncode == 0, prep.stderr
    assert json.loads(prep.stdout)["sha256"] == hashlib.sha256(b"abc").hexdigest()


def test_cli_usage_errors():
    for args, needle in [
        (["s3://b/k", "--out", "x"], "choose exactly one"),
        (["http://b/k", "--out", "x", "--local", "2"], "s3://BUCKET/KEY"),
        (["s3://b/k", "--out", "x", "--local", "2", "--mpi"], "choose exactly one"),
        (["s3://b/k", "--out", "x", "--local", "2", "--requests", "0"], "--requests must be > 0"),
        (["s3://b/k", "--out", "x", "--local", "2", "--connections", "0"], "--connections must be > 0"),
        (["s3://b/k", "--out", "x", "--local", "2", "--verify", "both"], "'--verify': 'both' is not one of"),
    ]:
        run = _cli(*args)
        assert run.returncode == 2, run.stderr
        assert needle in run.stderr and "Traceback" not in run.stderr


def test_mpi_ranks_meet_through_mpi(versitygw, s3, tmp_path):
    """`mpiexec -n 4 parcomm bcast ... --mpi`: MPICH starts the nodes, they
    exchange endpoints with MPI and move data over TCP; rank 0 prints all
    four reports."""
    size = 7 * PIECE * WORK + 3
    url, digest = s3(size)
    env = {**os.environ, **versitygw.environ()}
    run = subprocess.run(
        [
            "mpiexec",
            "-n",
            "4",
            sys.executable,
            "-m",
            "parcomm",
            "bcast",
            url,
            "--out",
            str(tmp_path / "out.{rank}"),
            "--mpi",
            "--work-pieces",
            str(WORK),
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    reports = json.loads(run.stdout)["nodes"]
    assert sorted(r["rank"] for r in reports) == [0, 1, 2, 3]
    assert sum(r["bytes_from_storage"] for r in reports) == size
    for rank in range(4):
        assert hashlib.sha256((tmp_path / f"out.{rank}").read_bytes()).hexdigest() == digest


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--local", "2"], "directory /nonexistent/dir does not exist"),
        (["--rendezvous", "127.0.0.1:9", "--rank", "1", "--nodes", "2"], "directory /nonexistent/dir does not exist"),
    ],
)
def test_bad_out_path_is_one_line_exit_2(extra, expected):
    run = _cli("s3://b/k", "--out", "/nonexistent/dir/x", *extra)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [run.stderr.strip()] and expected in run.stderr


def test_bad_out_path_under_mpi_is_one_line_per_rank():
    from parcomm.comm import CommError
    from parcomm.comm.mpi import find_mpiexec

    try:
        mpiexec = find_mpiexec()
    except CommError as exc:
        pytest.skip(str(exc))
    run = subprocess.run(
        [mpiexec, "-n", "3", sys.executable, "-m", "parcomm", "bcast", "s3://b/k", "--out", "/nonexistent/x", "--mpi"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2, run.stderr
    assert len(lines) == 3 and all(
        ln == "error: --out /nonexistent/x: directory /nonexistent does not exist" for ln in lines
    ), run.stderr


def test_hand_started_nodes_need_a_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PARCOMM_JOB_KEY"}
    base = ["s3://b/k", "--out", str(tmp_path / "x"), "--rendezvous-dir", str(tmp_path), "--rank", "0", "--nodes", "2"]
    run = _cli(*base, env=env)
    assert run.returncode == 2 and "needs a shared key" in run.stderr and "Traceback" not in run.stderr
    secret = "ab" * 8
    run = _cli(*base, env={**env, "PARCOMM_JOB_KEY": secret})  # 8 bytes: too short to be a secret
    assert run.returncode == 2 and "at least 16" in run.stderr and secret not in run.stderr
    loose = tmp_path / "loose.key"
    loose.write_text("cd" * 32)
    loose.chmod(0o644)
    run = _cli(*base, "--key-file", str(loose), env=env)
    assert run.returncode == 2 and "chmod 600" in run.stderr and "cd" * 32 not in run.stderr
