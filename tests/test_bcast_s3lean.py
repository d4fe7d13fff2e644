"""The boto3-free data path of ``parcomm bcast`` (``apps/bcast/sigv4.py``, ``apps/bcast/s3http.py``):
SigV4 against AWS's published example, then HEAD and ranged GETs against a real S3 server
(versitygw on 127.0.0.1), its errors (same messages as the boto3 path, no secret in them), and a
``parcomm bcast get`` whose node never imports botocore."""

from __future__ import annotations

import calendar
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast import s3http, sigv4
from parcomm.apps.bcast.s3 import (
    AccessDenied,
    ObjectChanged,
    RetryPolicy,
    S3Client,
    S3Config,
    S3Error,
    StorageUnavailable,
)

FAST_RETRY = RetryPolicy(max_attempts=30, base_delay=0.005, max_delay=0.05, total_timeout=20.0)

# -- SigV4: known answer ---------------------------------------------------------------
# "Example: GET Object" of "Signature Calculations for the Authorization Header: Transferring
# Payload in a Single Chunk (AWS Signature Version 4)", Amazon S3 API reference:
# https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
AWS_EXAMPLE_CREDENTIALS = sigv4.Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
AWS_EXAMPLE_TIME = calendar.timegm((2013, 5, 24, 0, 0, 0, 0, 0, 0))  # 20130524T000000Z
AWS_EXAMPLE_CANONICAL = "\n".join(
    [
        "GET",
        "/test.txt",
        "",
        "host:examplebucket.s3.amazonaws.com",
        "range:bytes=0-9",
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "x-amz-date:20130524T000000Z",
        "",
        "host;range;x-amz-content-sha256;x-amz-date",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ]
)
AWS_EXAMPLE_STRING_TO_SIGN = (
    "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
    "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
)
AWS_EXAMPLE_SIGNATURE = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"


def test_sigv4_matches_the_aws_documentation_example():
    headers = {
        "Host": "examplebucket.s3.amazonaws.com",
        "Range": "bytes=0-9",
        "x-amz-content-sha256": sigv4.EMPTY_PAYLOAD_SHA256,
        "x-amz-date": sigv4.amz_date(AWS_EXAMPLE_TIME),
    }
    canonical = sigv4.canonical_request("GET", "/test.txt", headers, sigv4.EMPTY_PAYLOAD_SHA256)
    assert canonical == AWS_EXAMPLE_CANONICAL
    to_sign = sigv4.string_to_sign("20130524T000000Z", sigv4.scope("20130524", "us-east-1"), canonical)
    assert to_sign == AWS_EXAMPLE_STRING_TO_SIGN
    key = sigv4.signing_key(AWS_EXAMPLE_CREDENTIALS.secret_key, "20130524", "us-east-1")
    assert sigv4.signature(key, to_sign) == AWS_EXAMPLE_SIGNATURE
    signed = sigv4.sign(
        "GET",
        "examplebucket.s3.amazonaws.com",
        "/test.txt",
        {"Range": "bytes=0-9"},
        AWS_EXAMPLE_CREDENTIALS,
        "us-east-1",
        payload_hash=sigv4.EMPTY_PAYLOAD_SHA256,
        now=AWS_EXAMPLE_TIME,
    )
    assert signed["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        f"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature={AWS_EXAMPLE_SIGNATURE}"
    )
    assert AWS_EXAMPLE_CREDENTIALS.secret_key not in repr(AWS_EXAMPLE_CREDENTIALS)


def test_sigv4_session_token_is_signed_and_uri_encoding():
    creds = sigv4.Credentials("AK", "SK", session_token="TOKEN")
    signed = sigv4.sign("HEAD", "h:9000", "/b/k", {}, creds, "eu-west-1", now=AWS_EXAMPLE_TIME)
    assert signed["x-amz-security-token"] == "TOKEN" and signed["x-amz-content-sha256"] == "UNSIGNED-PAYLOAD"
    assert "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token," in signed["Authorization"]
    assert "/20130524/eu-west-1/s3/aws4_request," in signed["Authorization"]
    assert sigv4.uri_encode("a b/c+d~e_é", keep_slash=True) == "a%20b/c%2Bd~e_%C3%A9"
    assert sigv4.uri_encode("a/b", keep_slash=False) == "a%2Fb"


def test_addressing_and_eligibility():
    custom = S3Config(endpoint_url="http://127.0.0.1:7070/", access_key="a", secret_key="b", region="us-east-1")
    assert s3http.target(custom, "bkt", "dir/a b") == ("http", "127.0.0.1", 7070, "127.0.0.1:7070", "/bkt/dir/a%20b")
    aws = S3Config(access_key="a", secret_key="b", region="eu-west-1")
    assert s3http.target(aws, "bkt", "k") == (
        "https",
        "bkt.s3.eu-west-1.amazonaws.com",
        443,
        *["bkt.s3.eu-west-1.amazonaws.com", "/k"],
    )
    assert s3http.target(replace(aws, region="us-east-1"), "my.dotted", "k")[3:] == ("s3.amazonaws.com", "/my.dotted/k")
    assert s3http.eligible(custom, {}) and s3http.eligible(S3Config(anonymous=True, region="us-east-1"), {})
    assert s3http.eligible(custom, {"https_proxy": "http://p:3128", "AWS_CA_BUNDLE": "/x.pem"})
    assert not s3http.eligible(custom, {"HTTP_PROXY": "http://p:3128"})
    assert not s3http.eligible(replace(custom, profile="p"), {})
    assert not s3http.eligible(S3Config(region="us-east-1"), {})  # boto3's credential chain
    with pytest.raises(ValueError, match="needs boto3"):
        S3Client(replace(custom, profile="p"), lean=True)


def test_config_file_settings_send_the_node_to_boto3(tmp_path):
    """boto3 applies the config file's default profile even with keys from the environment:
    an endpoint or a CA bundle there must not be silently ignored by the lean path."""
    custom = S3Config(endpoint_url="http://127.0.0.1:7070/", access_key="a", secret_key="b", region="us-east-1")
    cfg = tmp_path / "config"
    env = {"AWS_CONFIG_FILE": str(cfg)}
    assert s3http.eligible(custom, env)  # no file
    cfg.write_text("[default]\nregion = eu-west-1\noutput = json\n[profile other]\nendpoint_url = http://x\n")
    assert s3http.eligible(custom, env)  # nothing that changes the request; another profile's settings
    for extra in (
        "endpoint_url = http://10.0.0.1:9000",
        "ca_bundle = /etc/ca.pem",
        "s3 =\n  addressing_style = virtual",
    ):
        cfg.write_text(f"[default]\nregion = eu-west-1\n{extra}\n")
        assert not s3http.eligible(custom, env), extra
    cfg.write_text("[default\nregion")  # unreadable: boto3 reports it
    assert not s3http.eligible(custom, env)
    cfg.write_text("[DEFAULT]\nca_bundle = /etc/ca.pem\n[default]\nregion = eu-west-1\n")
    assert not s3http.eligible(custom, env)  # botocore's parser gives [default] the [DEFAULT] keys
    cfg.write_text("[default]\nregion = eu-west-1\n")
    assert not s3http.eligible(custom, {**env, "AWS_PROFILE": "other"})
    assert s3http.eligible(custom, {"HOME": str(tmp_path)})  # ~/.aws/config absent
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text("[default]\nendpoint_url = http://10.0.0.1:9000\n")
    assert not s3http.eligible(custom, {"HOME": str(tmp_path)})


# -- against versitygw -------------------------------------------------------------------
@pytest.fixture(scope="module")
def lean_objects(versitygw, s3_bucket):
    client = S3Client(versitygw.s3_config(), lean=False)
    made = {}
    for name, size in [("small", 1), ("odd", 1_000_003), ("two-mb", 2 * 1024 * 1024)]:
        url = f"s3://{s3_bucket}/lean/{name} x+y.bin"  # a space and a plus sign: URI encoding matters
        data = os.urandom(size)
        client.put_bytes(url, data, metadata={"origin": "lean"})
        made[name] = (url, data)
    return made


def test_head_and_ranged_gets_equal_the_object(versitygw, lean_objects):
    lean = S3Client(versitygw.s3_config(), retry=FAST_RETRY, lean=True)
    boto = S3Client(versitygw.s3_config(), retry=FAST_RETRY, lean=False)
    for url, data in lean_objects.values():
        assert lean.head(url) == boto.head(url)
        assert lean.head(url).size == len(data) and lean.head(url).metadata == {"origin": "lean"}
        assert lean.get_bytes(url) == data
    url, data = lean_objects["odd"]
    n = len(data)
    for start, end in [(0, 1), (n - 1, n), (12345, 678901)]:
        assert lean.get_bytes(url, start, end, etag=lean.head(url).etag) == data[start:end]
    chunks: list[tuple[int, int]] = []
    lean.get_range(url, 1000, 11000, lambda o, d: chunks.append((o, len(d))), chunk_size=4096)
    assert chunks == [(1000, 4096), (5096, 4096), (9192, 1808)]
    assert lean.stats.retries == 0
    with pytest.raises(S3Error, match="beyond the end"):
        lean.get_bytes(url, n - 10, n + 10)


def test_changed_object_is_object_changed(versitygw, s3_bucket):
    lean = S3Client(versitygw.s3_config(), retry=FAST_RETRY, lean=True)
    url = f"s3://{s3_bucket}/lean/changing.bin"
    lean.put_bytes(url, b"a" * 1000)
    etag = lean.head(url).etag
    lean.put_bytes(url, b"b" * 1000)
    with pytest.raises(ObjectChanged, match="ETag differs"):
        lean.get_bytes(url, 0, 1000, etag=etag)


def _errors(make, url: str) -> list[str]:
    """The messages of HEAD and GET of ``url`` by ``make(lean)`` clients, lean and boto3."""
    out = []
    for lean in (True, False):
        client = make(lean)
        for op in (client.head, lambda u, c=client: c.get_bytes(u, 0, 1)):
            with pytest.raises(S3Error) as info:
                op(url)
            out.append(f"{type(info.value).__name__}: {info.value}")
    return out


def test_errors_are_those_of_the_boto3_path(versitygw, s3_bucket, lean_objects):
    cfg = versitygw.s3_config()
    url, _ = lean_objects["small"]
    wrong = replace(cfg, secret_key="not-the-secret-0123456789")
    denied = _errors(lambda lean: S3Client(wrong, retry=FAST_RETRY, lean=lean), url)
    assert denied[:2] == denied[2:]  # lean == boto3, for HEAD and for GET
    assert denied[1].startswith("AccessDenied: ") and "SignatureDoesNotMatch" in denied[1]
    assert all(wrong.secret_key not in m and "Signature=" not in m for m in denied)
    unknown = _errors(lambda lean: S3Client(replace(cfg, access_key="nobody"), retry=FAST_RETRY, lean=lean), url)
    assert unknown[:2] == unknown[2:] and unknown[0].startswith("AccessDenied: ")
    for missing, what in [(f"s3://{s3_bucket}/lean/no-such-key", "object"), ("s3://no-such-bucket-y/k", "bucket")]:
        found = _errors(lambda lean: S3Client(cfg, retry=FAST_RETRY, lean=lean), missing)
        assert found == [f"ObjectNotFound: {missing}: {what} not found"] * 4


class _HugeErrorBody(http.server.BaseHTTPRequestHandler):
    """403 with a 1 MiB body whose S3 error code lies past the 64 KiB the client reads."""

    def do_GET(self) -> None:
        body = b"<Error>" + b" " * (1 << 20) + b"<Code>Hidden</Code></Error>"
        self.send_response(403)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_error_bodies_are_read_only_up_to_the_cap():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HugeErrorBody)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        cfg = S3Config(endpoint_url=f"http://127.0.0.1:{port}", access_key="a", secret_key="s3cr3t", region="us-east-1")
        with pytest.raises(AccessDenied, match=r"access denied \(403\)") as info:
            S3Client(cfg, retry=FAST_RETRY, lean=True).get_bytes("s3://b/k", 0, 10)
        assert "s3cr3t" not in str(info.value)
    finally:
        server.shutdown()
        server.server_close()


def test_unreachable_endpoint_is_retried_then_unavailable():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = S3Config(endpoint_url=f"http://127.0.0.1:{port}", access_key="a", secret_key="b", region="us-east-1")
    c = S3Client(cfg, retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, total_timeout=5.0), lean=True)
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match="HEAD failed 3 times.*EndpointConnectionError"):
        c.head("s3://bkt/key")
    assert time.monotonic() - started < 30


# -- the node does not import botocore ---------------------------------------------------
RUN_CLI_AND_LIST_MODULES = """
import json, runpy, sys
report, sys.argv = sys.argv[1], ["parcomm", *sys.argv[2:]]
try:
    runpy.run_module("parcomm", run_name="__main__")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("boto3", "botocore", "urllib3"))
with open(report, "w") as f:
    json.dump({"exit": code, "loaded": loaded}, f)
"""


def _small_object(versitygw, url: str) -> bytes:
    data = os.urandom(300_000)
    client = S3Client(versitygw.s3_config())
    client.put_bytes(url, data)
    mf.prepare(url, 64 * 1024, client=client)
    return data


def test_a_lone_node_never_imports_botocore(versitygw, s3_bucket, tmp_path):
    url = f"s3://{s3_bucket}/lean/node-object.bin"
    data = _small_object(versitygw, url)
    report, out = tmp_path / "modules.json", tmp_path / "out.bin"
    args = ["bcast", "get", url, "--out", str(out), "--local", "1"]
    env = {**os.environ, **versitygw.environ()}
    run = subprocess.run(
        [sys.executable, "-c", RUN_CLI_AND_LIST_MODULES, str(report), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(report.read_text())
    assert result == {"exit": 0, "loaded": []}, result
    assert out.read_bytes() == data


# Every process that starts with this directory on its path lists its modules when it exits.
LIST_MODULES_AT_EXIT = """
import atexit, json, os, sys

def _list():
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("boto3", "botocore", "urllib3"))
    with open(os.path.join(os.environ["MODULE_REPORTS"], f"{os.getpid()}.json"), "w") as f:
        json.dump({"argv": sys.argv[:1], "loaded": loaded}, f)

atexit.register(_list)
"""


def test_local_nodes_never_import_botocore(versitygw, s3_bucket, tmp_path):
    """``--local 2``: the parent and both node processes (the keys reach them in their environment)."""
    url = f"s3://{s3_bucket}/lean/nodes-object.bin"
    data = _small_object(versitygw, url)
    hook, reports = tmp_path / "hook", tmp_path / "reports"
    hook.mkdir()
    reports.mkdir()
    (hook / "sitecustomize.py").write_text(LIST_MODULES_AT_EXIT)
    path = os.pathsep.join(p for p in [str(hook), os.environ.get("PYTHONPATH", "")] if p)
    env = {**os.environ, **versitygw.environ(), "PYTHONPATH": path, "MODULE_REPORTS": str(reports)}
    out = tmp_path / "out.{rank}"
    args = ["-m", "parcomm", "bcast", "get", url, "--out", str(out), "--local", "2"]
    run = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    found = [json.loads(p.read_text()) for p in reports.iterdir()]
    assert len(found) == 3, found  # the parent and two nodes
    assert all(r["loaded"] == [] for r in found), found
    assert all((tmp_path / f"out.{rank}").read_bytes() == data for rank in range(2))


def test_node_keys_come_back_from_the_environment():
    from parcomm.apps.bcast.launch import keys_from_environment

    env = {"AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk", "AWS_SESSION_TOKEN": "tok"}
    public = S3Config(endpoint_url="http://h:1", region="us-east-1")
    back = keys_from_environment(public, env)
    assert (back.access_key, back.secret_key, back.session_token) == ("ak", "sk", "tok")
    for kept in (replace(public, profile="p"), replace(public, anonymous=True), replace(public, access_key="x")):
        assert keys_from_environment(kept, env) == kept
    assert keys_from_environment(public, {"AWS_ACCESS_KEY_ID": "ak"}) == public


def test_s3_config_repr_shows_no_secret():
    """A config printed in a log line or a traceback names the endpoint, never the keys."""
    from parcomm.apps.bcast.s3 import S3Config

    cfg = S3Config("http://127.0.0.1:9", access_key="AKIDEXAMPLE", secret_key="s3cr3t-value", session_token="t0k3n")
    shown = repr(cfg)
    assert "127.0.0.1:9" in shown
    assert "s3cr3t-value" not in shown and "t0k3n" not in shown
