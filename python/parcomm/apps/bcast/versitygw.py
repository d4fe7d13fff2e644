"""A real S3 server on 127.0.0.1 for tests and demos: versitygw (Apache-2.0) with its
posix backend serving a directory (each subdirectory is a bucket).

* :func:`find_versitygw` / :func:`ensure_versitygw` locate the binary
  (``$PARCOMM_VERSITYGW``, ``PATH``, ``$(go env GOPATH)/bin``) or ``go install`` the
  pinned version (``scripts/install-versitygw.sh`` does the same for CI).
* :class:`VersityGW` starts one gateway on a free loopback port, waits until it
  answers, and stops exactly the process it started.

    with VersityGW(tmp_path / "s3") as gw:
        gw.create_bucket("data")
        client = S3Client(gw.s3_config())
"""

from __future__ import annotations

import ctypes
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

VERSITYGW_MODULE = "github.com/versity/versitygw/cmd/versitygw"
VERSITYGW_VERSION = "v1.8.0"
HEALTH_PATH = "/health"

DEFAULT_ACCESS_KEY = "parcomm-test"
DEFAULT_SECRET_KEY = "parcomm-test-secret"
DEFAULT_REGION = "us-east-1"


class VersityGWNotAvailable(RuntimeError):
    """The versitygw binary is missing and could not be installed."""


class VersityGWStartError(RuntimeError):
    """The gateway process exited or did not answer in time."""


def _go_bin_dir() -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    try:
        out = subprocess.run([go, "env", "GOPATH"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    # GOPATH may be a list; `go install` writes to the first entry.
    first = out.stdout.strip().split(os.pathsep)[0]
    return Path(first) / "bin" if first else None


def find_versitygw() -> str | None:
    """Path of an executable versitygw, or None. ``$PARCOMM_VERSITYGW`` wins."""
    explicit = os.environ.get("PARCOMM_VERSITYGW")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    on_path = shutil.which("versitygw")
    if on_path:
        return on_path
    gobin = os.environ.get("GOBIN")
    candidates = [Path(gobin)] if gobin else []
    go_bin = _go_bin_dir()
    if go_bin is not None:
        candidates.append(go_bin)
    candidates.append(Path.home() / "go" / "bin")
    for directory in candidates:
        binary = directory / "versitygw"
        if os.access(binary, os.X_OK):
            return str(binary)
    return None


def install_versitygw(timeout: float = 900.0) -> str:
    """``go install`` the pinned versitygw and return its path."""
    go = shutil.which("go")
    if go is None:
        raise VersityGWNotAvailable("versitygw is not installed and `go` is not on PATH to install it")
    target = f"{VERSITYGW_MODULE}@{VERSITYGW_VERSION}"
    try:
        proc = subprocess.run([go, "install", target], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise VersityGWNotAvailable(f"`go install {target}` took more than {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise VersityGWNotAvailable(f"`go install {target}` failed: " + " | ".join(tail))
    found = find_versitygw()
    if found is None:
        raise VersityGWNotAvailable(f"`go install {target}` succeeded but the binary was not found")
    return found


def ensure_versitygw(install: bool = True) -> str:
    """Path of versitygw, installing the pinned version if allowed and needed."""
    found = find_versitygw()
    if found is not None:
        return found
    if not install:
        raise VersityGWNotAvailable("versitygw not found (set $PARCOMM_VERSITYGW or run scripts/install-versitygw.sh)")
    return install_versitygw()


def _die_with_parent_preexec():
    """On Linux, have the gateway get SIGTERM if we die without stopping it (a killed
    test run must not leave servers behind). The kernel ties this to the forking
    *thread*, so only use it from the main thread, which lives as long as we do."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    pr_set_pdeathsig = 1

    def preexec() -> None:
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)

    return preexec


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the caller retries if it is taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class VersityGW:
    """One versitygw process serving ``root_dir`` on 127.0.0.1 (posix backend).

    ``keep_alive`` turns on HTTP keep-alive (versitygw closes every connection
    otherwise, which adds a TCP handshake to each request).
    """

    def __init__(
        self,
        root_dir: str | os.PathLike[str],
        *,
        access_key: str = DEFAULT_ACCESS_KEY,
        secret_key: str = DEFAULT_SECRET_KEY,
        region: str = DEFAULT_REGION,
        host: str = "127.0.0.1",
        port: int | None = None,
        binary: str | None = None,
        keep_alive: bool = True,
        startup_timeout: float = 20.0,
        start_attempts: int = 3,
    ) -> None:
        self.root_dir = Path(root_dir)
        self.access_key = access_key
        self.secret_key = secret_key
        self.region = region
        self.host = host
        self.requested_port = port
        self.binary = binary
        self.keep_alive = keep_alive
        self.startup_timeout = startup_timeout
        self.start_attempts = start_attempts
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None

    # -- lifecycle ---------------------------------------------------------
    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise RuntimeError("versitygw is not running")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> "VersityGW":
        if self._proc is not None:
            return self
        binary = self.binary or ensure_versitygw()
        self.root_dir.mkdir(parents=True, exist_ok=True)
        last_error = ""
        # A free port can be taken between choosing and binding it: try a few.
        for _ in range(max(1, self.start_attempts)):
            port = self.requested_port or free_port(self.host)
            if self._launch(binary, port):
                return self
            last_error = self._log_tail()
            self.stop()
            if self.requested_port is not None:
                break
        raise VersityGWStartError(f"versitygw did not start: {last_error or 'no output'}")

    def _launch(self, binary: str, port: int) -> bool:
        fd, log_name = tempfile.mkstemp(prefix="versitygw-", suffix=".log")
        self._log_path = Path(log_name)
        argv = [
            binary,
            "--port",
            f"{self.host}:{port}",
            "--access",
            self.access_key,
            "--secret",
            self.secret_key,
            "--region",
            self.region,
            "--health",
            HEALTH_PATH,
            "--quiet",
        ]
        if self.keep_alive:
            argv.append("--keep-alive")
        argv += ["posix", str(self.root_dir)]
        # Credentials go on the command line, not in the environment, so an
        # inherited ROOT_ACCESS_KEY_ID cannot override them.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROOT_", "VGW_"))}
        with os.fdopen(fd, "wb") as log:
            self._proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                preexec_fn=_die_with_parent_preexec(),
            )
        self.port = port
        return self._wait_ready()

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.02
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                return False
            if self._health_ok():
                return True
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        return False

    def _health_ok(self) -> bool:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=1.0)
        try:
            conn.request("GET", HEALTH_PATH)
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def _log_tail(self) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        lines = self._log_path.read_text(errors="replace").strip().splitlines()
        return " | ".join(lines[-5:])

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the process this object started (by its pid), then remove its log."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        self.port = None
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> "VersityGW":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- conveniences ------------------------------------------------------
    def environ(self) -> dict[str, str]:
        """The S3 environment variables a client (or a ``parcomm bcast`` child) needs."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_ENDPOINT_URL_S3": self.endpoint_url,
        }

    def s3_config(self, endpoint_url: str | None = None):  # -> S3Config (imported lazily: boto3 is heavy)
        from .s3 import S3Config

        return S3Config(
            endpoint_url=endpoint_url or self.endpoint_url,
            access_key=self.access_key,
            secret_key=self.secret_key,
            region=self.region,
        )

    def create_bucket(self, name: str) -> Path:
        """Create a bucket; with the posix backend a bucket is a top-level directory."""
        from .s3 import S3Client

        S3Client(self.s3_config()).create_bucket(name)
        return self.root_dir / name


def main(argv: list[str] | None = None) -> int:
    """Serve a directory over S3 on 127.0.0.1 until interrupted (for demos):
    ``python -m parcomm.apps.bcast.versitygw DIR [--port N]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="versitygw-serve", description=main.__doc__)
    parser.add_argument("root", help="directory to serve; each subdirectory is a bucket")
    parser.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    parser.add_argument("--access-key", default=DEFAULT_ACCESS_KEY)
    parser.add_argument("--secret-key", default=DEFAULT_SECRET_KEY)
    args = parser.parse_args(argv)
    with VersityGW(args.root, port=args.port, access_key=args.access_key, secret_key=args.secret_key) as gw:
        for name, value in gw.environ().items():
            print(f"export {name}={value}", flush=True)
        stop = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.append(True))
        assert gw._proc is not None
        while not stop and gw._proc.poll() is None:
            time.sleep(0.2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
