"""What a user of ``parcomm bcast get`` sees (issue 34, item 6): a single node's progress
bar counts bytes, one failure exits the same way with one node or many, ``--json``
answers even when the only node failed, and a failure shared by nodes is one line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast.real import Progress
from parcomm.apps.bcast.s3 import S3Client
from ports import free_ports

PIECE = 64 * 1024


@pytest.fixture(scope="module")
def obj(versitygw, s3_bucket):
    client = S3Client(versitygw.s3_config())
    url = f"s3://{s3_bucket}/ux/obj.bin"
    client.put_bytes(url, np.random.default_rng(34).bytes(12 * PIECE + 5))
    mf.prepare(url, PIECE, client=client)
    return url


def _get(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parcomm", "bcast", "get", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_single_node_bar_shows_bytes_of_the_object():
    """Before: the bar was fed pieces, and its byte columns printed 1,024 pieces of a GiB
    object as "0.9/1.0 kB". Now it is fed bytes: GB of the object, GB/s."""
    from parcomm.cli.bcast import progress_in_bytes
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn
    from rich.progress import Progress as Bar

    size = 1 << 30
    half = Progress(512, 1024, 512 << 20, 0, bytes_held=512 << 20, size=size)
    assert progress_in_bytes(half) == {"completed": 512 << 20, "total": size}
    text = io.StringIO()
    with Bar(BarColumn(), DownloadColumn(), console=Console(file=text, width=100, force_terminal=True)) as bar:
        bar.add_task("bcast", **progress_in_bytes(half))
    assert "0.5/1.1 GB" in text.getvalue()


def test_node_progress_counts_bytes_with_a_short_last_piece(versitygw, obj, tmp_path):
    """The bytes a node reports held add up to the object, its short last piece included."""
    from parcomm.apps.bcast.launch import Job, run_one
    from parcomm.apps.bcast.s3 import S3Config

    seen: list[Progress] = []
    job = Job(obj, str(tmp_path / "out"), s3=S3Config(**{**versitygw.s3_config().__dict__}))
    report = run_one(job, rank=0, nodes=1, on_progress=seen.append)
    assert report.complete_s is not None
    assert (tmp_path / "out").stat().st_size == 12 * PIECE + 5
    final = [p for p in seen if p.held == p.pieces]
    for p in final:
        assert p.bytes_held == p.size == 12 * PIECE + 5


@pytest.mark.parametrize("local", ["1", "3"])
def test_a_missing_object_exits_2_with_one_node_or_many(versitygw, s3_bucket, tmp_path, local):
    """Before: exit 2 with --local 1, exit 1 with --local N. What the user named is
    missing either way: 2, and one line."""
    env = {**os.environ, **versitygw.environ()}
    run = _get(f"s3://{s3_bucket}/ux/none.bin", "--out", str(tmp_path / "x"), "--local", local, env=env)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert len([ln for ln in run.stderr.splitlines() if "not found" in ln]) == 1, run.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("local", ["1", "2"])
def test_unreachable_storage_exits_1_with_one_node_or_many(tmp_path, local):
    """Storage that cannot be reached within --timeout is the run failing, not a usage
    mistake: 1, with one node or many."""
    port = free_ports(1)[0]  # nothing listens there
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}
    run = _get(
        "s3://b/o.bin",
        "--out",
        str(tmp_path / "x"),
        "--local",
        local,
        "--endpoint-url",
        f"http://127.0.0.1:{port}",
        "--timeout",
        "2s",
        env=env,
    )
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr and "2 s" in run.stderr, run.stderr


def test_json_answers_when_the_only_node_failed(versitygw, s3_bucket, tmp_path):
    """Before: --json with --local 1 printed nothing on stdout when the node failed."""
    env = {**os.environ, **versitygw.environ()}
    run = _get(f"s3://{s3_bucket}/ux/none.bin", "--out", str(tmp_path / "x"), "--local", "1", "--json", env=env)
    assert run.returncode == 2, run.stderr
    answer = json.loads(run.stdout)
    assert answer["nodes"] == [] and list(answer["errors"]) == ["0"] and "not found" in answer["errors"]["0"]
    assert answer["summary"]["procs_failed"] == 1


def test_bad_pieces_from_storage_are_one_line_for_every_node(versitygw, obj, tmp_path):
    """Before: "rank R: storage fetch of work W returned bad pieces 5 times" once per node
    (the rank made every line distinct). Now one line naming the nodes."""
    good = mf.load(obj, client=S3Client(versitygw.s3_config()))
    digests = [bytes(b ^ 0xFF for b in d) for d in good.piece_digests]  # every piece 'corrupt'
    lying = tmp_path / "lying.json"
    lying.write_text(mf.Manifest(good.size, good.etag, good.piece_size, tuple(digests), good.sha256).to_json())
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, **versitygw.environ()}
    run = _get(
        obj, "--out", str(out / "x"), "--local", "3", "--manifest-url", str(lying), "--work-pieces", "4", env=env
    )
    assert run.returncode == 1, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if "bad pieces" in ln]
    assert len(lines) == len(set(lines)) and all(ln.startswith("node") for ln in lines), run.stderr
    assert not any("rank " in ln for ln in lines), lines  # the line names the nodes once
    assert list(out.iterdir()) == []


def test_error_lines_strip_each_nodes_own_rank():
    from parcomm.cli.bcast import _error_lines

    errors = {r: f"rank {r}: storage fetch of work 62 returned bad pieces 5 times" for r in range(4)}
    assert _error_lines(errors) == ["nodes 0-3: storage fetch of work 62 returned bad pieces 5 times"]
