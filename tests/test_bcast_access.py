"""How `parcomm bcast` reaches the object, as boto3/aws-cli users expect: the hash list
kept elsewhere (--manifest-url), AWS profiles (--profile), public buckets
(--no-sign-request), and outputs that two MPI ranks would share refused before
anything is fetched. Real S3 (versitygw on 127.0.0.1), real node processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast.s3 import ObjectNotFound, S3Client
from parcomm.strictjson import vocabulary_problems

PIECE = 64 * 1024
SIZE = 9 * PIECE + 321
AWS_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
)


def _cli(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "parcomm", "bcast", *args], env=env, capture_output=True, text=True, timeout=180
    )


def _prepare(url: str, where, env) -> dict:
    """`bcast prepare` with the hash list at ``where``; its --json."""
    run = _cli("prepare", url, "--piece-size", "64KiB", "--manifest-url", str(where), "--json", env=env)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _get(url: str, out, nodes: int, *extra: str, env):
    return _cli(url, "--out", str(out), "--local", str(nodes), *extra, env=env)


def _no_keys(gw, tmp_path) -> dict:
    """The endpoint and region, but no credentials and no AWS config files of this machine."""
    env = {k: v for k, v in os.environ.items() if k not in AWS_VARS}
    env.update(AWS_ENDPOINT_URL_S3=gw.endpoint_url, AWS_REGION=gw.region)
    env["AWS_CONFIG_FILE"] = str(tmp_path / "no-config")
    env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "no-credentials")
    return env


@pytest.fixture(scope="module")
def buckets(versitygw):
    """A private bucket holding the object (no sidecar), a second bucket for hash lists,
    and a public-read bucket (bucket policy: GetObject for everyone)."""
    for name in ("access-private", "access-lists", "access-public"):
        versitygw.create_bucket(name)
    client = S3Client(versitygw.s3_config())
    data = np.random.default_rng(7).bytes(SIZE)
    for bucket in ("access-private", "access-public"):
        client.put_bytes(f"s3://{bucket}/obj.bin", data)
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": "*",
                "Action": ["s3:GetObject"],
                "Resource": ["arn:aws:s3:::access-public/*"],
            }
        ],
    }
    client._boto().put_bucket_policy(Bucket="access-public", Policy=json.dumps(policy))
    return hashlib.sha256(data).hexdigest()


def _outputs_match(tmp_path, nodes: int, digest: str) -> None:
    for rank in range(nodes):
        assert hashlib.sha256((tmp_path / f"out.{rank}").read_bytes()).hexdigest() == digest


def test_hash_list_in_a_local_file(versitygw, buckets, tmp_path):
    env = {**os.environ, **versitygw.environ()}
    url, lst = "s3://access-private/obj.bin", tmp_path / "obj.hashes.json"
    prepared = _prepare(url, lst, env)
    assert prepared["hash_list"] == str(lst) and prepared["size_bytes"] == SIZE
    assert vocabulary_problems(prepared) == []
    assert json.loads(lst.read_text())["sha256"] == buckets
    with pytest.raises(ObjectNotFound):  # nothing written beside the object
        S3Client(versitygw.s3_config()).head(mf.sidecar_url(url))
    run = _get(url, tmp_path / "out", 3, "--manifest-url", str(lst), env=env)
    assert run.returncode == 0, run.stderr
    _outputs_match(tmp_path, 3, buckets)


def test_hash_list_in_another_bucket(versitygw, buckets, tmp_path):
    env = {**os.environ, **versitygw.environ()}
    url, lst = "s3://access-private/obj.bin", "s3://access-lists/hashes/obj.json"
    _prepare(url, lst, env)
    run = _get(url, tmp_path / "out", 2, "--manifest-url", lst, env=env)
    assert run.returncode == 0, run.stderr
    _outputs_match(tmp_path, 2, buckets)


def test_missing_hash_list_elsewhere_says_how_to_make_it(versitygw, buckets, tmp_path):
    env = {**os.environ, **versitygw.environ()}
    where = tmp_path / "none.json"
    run = _get("s3://access-private/obj.bin", tmp_path / "x", 1, "--manifest-url", str(where), env=env)
    assert run.returncode == 2 and "Traceback" not in run.stderr  # what the user named is missing
    assert f"--manifest-url {where}" in run.stderr and "parcomm bcast prepare" in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_public_bucket_without_credentials(versitygw, buckets, tmp_path):
    """--no-sign-request: no key anywhere in the environment or config files."""
    env = {**os.environ, **versitygw.environ()}
    url, lst = "s3://access-public/obj.bin", tmp_path / "public.json"
    _prepare(url, lst, env)
    bare = _no_keys(versitygw, tmp_path)
    run = _get(url, tmp_path / "out", 2, "--manifest-url", str(lst), "--no-sign-request", env=bare)
    assert run.returncode == 0, run.stderr
    _outputs_match(tmp_path, 2, buckets)
    # The same unsigned request to a private bucket is refused, saying how it was made.
    denied = _get("s3://access-private/obj.bin", tmp_path / "p", 1, "--no-sign-request", env=bare)
    assert denied.returncode != 0 and "Traceback" not in denied.stderr
    assert "access denied" in denied.stderr and "--no-sign-request" in denied.stderr, denied.stderr


def test_aws_profile_from_the_config_files(versitygw, buckets, tmp_path):
    env = {**os.environ, **versitygw.environ()}
    url, lst = "s3://access-private/obj.bin", tmp_path / "obj.json"
    _prepare(url, lst, env)
    bare = _no_keys(versitygw, tmp_path)
    creds = tmp_path / "credentials"
    creds.write_text(
        f"[parcomm-test]\naws_access_key_id = {versitygw.access_key}\naws_secret_access_key = {versitygw.secret_key}\n"
    )
    bare["AWS_SHARED_CREDENTIALS_FILE"] = str(creds)
    run = _get(url, tmp_path / "out", 2, "--manifest-url", str(lst), "--profile", "parcomm-test", env=bare)
    assert run.returncode == 0, run.stderr
    _outputs_match(tmp_path, 2, buckets)
    assert versitygw.secret_key not in run.stdout + run.stderr
    # Without the profile there are no credentials, and the error says where they could come from.
    none = _get(url, tmp_path / "n", 1, "--manifest-url", str(lst), env=bare)
    assert none.returncode != 0 and "--profile" in none.stderr and "Traceback" not in none.stderr
    unknown = _get(url, tmp_path / "u", 1, "--profile", "nope", env=bare)
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
    assert "--profile nope: no such profile" in unknown.stderr, unknown.stderr


def test_access_usage_errors(tmp_path):
    both = _cli(
        "s3://b/k", "--out", str(tmp_path / "x"), "--local", "1", "--profile", "p", "--no-sign-request", env=os.environ
    )
    assert both.returncode == 2 and "exclude each other" in both.stderr
    bad = _cli("prepare", "s3://b/k", "--manifest-url", "s3://only-bucket", env=os.environ)
    assert bad.returncode == 2 and "--manifest-url s3://only-bucket" in bad.stderr and "Traceback" not in bad.stderr


def test_healthy_run_loses_no_peer(versitygw, buckets, tmp_path):
    """Peers that finish and close first departed; they were not lost."""
    env = {**os.environ, **versitygw.environ()}
    url, lst = "s3://access-private/obj.bin", tmp_path / "obj.json"
    _prepare(url, lst, env)
    run = _get(url, tmp_path / "out", 4, "--manifest-url", str(lst), "--work-pieces", "2", "--json", env=env)
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert vocabulary_problems(doc) == []  # procs, _bytes and _s, as every command's --json
    nodes = doc["nodes"]
    assert len(nodes) == 4 and all(n["peers_lost"] == [] and n["peers_dropped"] == [] for n in nodes), nodes
    assert sum(n["bytes_from_peers"] for n in nodes) > 0  # they did exchange


def test_mpi_ranks_sharing_one_output_are_refused(versitygw, buckets, tmp_path):
    from parcomm.comm import CommError
    from parcomm.comm.mpi import find_mpiexec

    try:
        mpiexec = find_mpiexec()
    except CommError as exc:
        pytest.skip(str(exc))
    env = {**os.environ, **versitygw.environ()}
    url, lst = "s3://access-private/obj.bin", tmp_path / "obj.json"
    _prepare(url, lst, env)
    out = tmp_path / "shared.bin"
    cmd = [mpiexec, "-n", "3", sys.executable, "-m", "parcomm", "bcast", url, "--mpi", "--manifest-url", str(lst)]
    run = subprocess.run([*cmd, "--out", str(out)], env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 3 and all("ranks 0, 1, 2 would write the same file" in ln for ln in lines), run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["obj.json"]  # no output, no marker left
    ok = subprocess.run(
        [*cmd, "--out", str(tmp_path / "out.{rank}")], env=env, capture_output=True, text=True, timeout=180
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    _outputs_match(tmp_path, 3, buckets)
