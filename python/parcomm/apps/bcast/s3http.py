"""S3 HEAD and ranged GET over ``http.client``, signed by :mod:`.sigv4`: the node's data path
without boto3 (whose import and client cost ~0.2 CPU s per process here).

One keep-alive connection per thread and host; connect and read timeouts as :class:`.s3.S3Client`
sets them; a connection whose response was not read to its end is dropped, never reused. No
retries here: failures are raised for :meth:`.s3.S3Client._call` to classify and retry.
Sizes from the network are bounded: status line and headers by ``http.client``'s limits, error
bodies by :data:`MAX_ERROR_BODY`. Neither the secret nor the ``Authorization`` header appears in
any exception raised here.
"""

from __future__ import annotations

import configparser
import contextlib
import http.client
import os
import re
import select
import socket
import threading
import time
from typing import Iterator, Mapping, Protocol
from urllib.parse import urlsplit

from . import sigv4


class S3Config(Protocol):
    """The fields of :class:`.s3.S3Config` used here (that module imports this one)."""

    @property
    def endpoint_url(self) -> str | None: ...
    @property
    def access_key(self) -> str | None: ...
    @property
    def secret_key(self) -> str | None: ...
    @property
    def session_token(self) -> str | None: ...
    @property
    def region(self) -> str | None: ...
    @property
    def profile(self) -> str | None: ...
    @property
    def anonymous(self) -> bool: ...


class S3Url(Protocol):
    @property
    def bucket(self) -> str: ...
    @property
    def key(self) -> str: ...


MAX_ERROR_BODY = 64 * 1024
_CODE = re.compile(rb"<Code>([A-Za-z0-9._-]{1,128})</Code>")
_MESSAGE = re.compile(rb"<Message>([^<]{0,512})</Message>")
_DNS_BUCKET = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
#: Settings botocore honours and this path does not: with any of them set, boto3 it is
#: (a proxy only if it is for the endpoint's scheme). ``AWS_CA_BUNDLE`` is honoured here.
_BOTO_ONLY_ENV = ("AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT")
#: Keys of the config file's ``[default]`` profile that cannot change where or how a request
#: signed with explicit keys goes (the region is passed to boto3 explicitly; retries are
#: :meth:`.s3.S3Client._call`'s). Any other key (``endpoint_url``, ``ca_bundle``, ``s3``,
#: ``services``...) sends the node to boto3, which applies it.
_HARMLESS_CONFIG_KEYS = frozenset(
    {
        "region",
        "output",
        "cli_pager",
        "retry_mode",
        "max_attempts",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
    }
)
_MAX_CONFIG_FILE = 1 << 20  # a config file is a few lines; read at most 1 MiB of it


class HttpStatusError(Exception):
    """A non-2xx answer: its status, S3 error code (the status if the body has none) and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"HTTP {status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class EndpointConnectionError(ConnectionError):
    pass


class ConnectTimeoutError(TimeoutError):
    pass


class ReadTimeoutError(TimeoutError):
    pass


def eligible(config: S3Config, environ: Mapping[str, str] | None = None) -> bool:
    """Whether this path can serve ``config`` as boto3 would: explicit keys (or unsigned), a
    region, an http(s) endpoint or none (AWS), no proxy or endpoint variant from the
    environment, and nothing in the AWS config file's default profile that boto3 would apply
    (an endpoint, a CA bundle...). Profiles and credential chains stay with boto3."""
    env = os.environ if environ is None else environ
    if config.profile or not config.region:
        return False
    if not (config.anonymous or (config.access_key and config.secret_key)):
        return False
    scheme = urlsplit(config.endpoint_url).scheme if config.endpoint_url else "https"
    if scheme not in ("http", "https"):
        return False
    proxies = [f"{scheme}_proxy", "all_proxy"]
    if any(env.get(name) for name in [*_BOTO_ONLY_ENV, *proxies, *(p.upper() for p in proxies)]):
        return False
    return not _shared_config_applies(env, os.path.expanduser("~") if environ is None else env.get("HOME", ""))


def _shared_config_applies(env: Mapping[str, str], home: str) -> bool:
    """Whether the AWS config file's active profile sets something botocore would apply to
    these requests (an ``endpoint_url``, a ``ca_bundle``, an ``s3`` or ``services`` section...):
    boto3 reads it even when the keys come from the environment. Unreadable: assume it does."""
    if env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE"):
        return True  # a named profile is boto3's to resolve
    given = env.get("AWS_CONFIG_FILE")
    if given:
        path = os.path.expanduser(os.path.expandvars(given))  # as botocore expands it
    elif home:
        path = os.path.join(home, ".aws", "config")
    else:
        return False
    if not os.path.exists(path):
        return False
    parser = configparser.RawConfigParser()  # as botocore reads it ([DEFAULT] keys inherited)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(_MAX_CONFIG_FILE + 1)
        if len(text) > _MAX_CONFIG_FILE:
            return True  # not read whole: boto3's to read
        parser.read_string(text)
    except (OSError, UnicodeDecodeError, configparser.Error):
        return True  # boto3 will report what is wrong with it
    if not parser.has_section("default"):
        return False
    return any(key not in _HARMLESS_CONFIG_KEYS for key in parser.options("default"))


def target(config: S3Config, bucket: str, key: str) -> tuple[str, str, int, str, str]:
    """``(scheme, host, port, Host header, path)`` of an object: path-style on a custom endpoint,
    virtual-host on AWS for a DNS-compatible bucket without dots (path-style otherwise)."""
    key_path = sigv4.uri_encode(key, keep_slash=True)
    if not config.endpoint_url:
        region = config.region or "us-east-1"
        base = "s3.amazonaws.com" if region == "us-east-1" else f"s3.{region}.amazonaws.com"
        if _DNS_BUCKET.fullmatch(bucket):
            return "https", f"{bucket}.{base}", 443, f"{bucket}.{base}", f"/{key_path}"
        return "https", base, 443, base, f"/{sigv4.uri_encode(bucket, keep_slash=False)}/{key_path}"
    parts = urlsplit(config.endpoint_url)
    scheme = parts.scheme
    host = parts.hostname or ""
    default = 443 if scheme == "https" else 80
    port = parts.port or default
    shown = f"[{host}]" if ":" in host else host
    header = shown if port == default else f"{shown}:{port}"
    prefix = parts.path.rstrip("/")
    return scheme, host, port, header, f"{prefix}/{sigv4.uri_encode(bucket, keep_slash=False)}/{key_path}"


def _error(status: int, reason: str, body: bytes) -> HttpStatusError:
    code = _CODE.search(body)
    message = _MESSAGE.search(body)
    text = message.group(1).decode("utf-8", "replace") if message else reason[:200]
    return HttpStatusError(status, code.group(1).decode("ascii") if code else str(status), text)


def shut(sock: socket.socket) -> None:
    """Shut a socket down from another thread: its blocked reader wakes up with EOF."""
    with contextlib.suppress(OSError):  # already closed or never connected
        sock.shutdown(socket.SHUT_RDWR)


class Transport:
    """Signed HEAD/GET exchanges; one instance may be shared by threads."""

    def __init__(self, config: S3Config, connect_timeout: float, read_timeout: float) -> None:
        self.config = config
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._credentials = (
            None
            if config.anonymous
            else sigv4.Credentials(config.access_key or "", config.secret_key or "", config.session_token)
        )
        self._local = threading.local()
        self._lock = threading.Lock()
        self._in_use: set[socket.socket] = set()  # sockets of exchanges under way (for abort)
        self._aborted = False

    def abort(self) -> None:
        """Shut down every socket in an exchange now (a blocked read returns at once) and
        refuse new exchanges: the job's deadline passed, or its node is failing."""
        with self._lock:
            self._aborted = True
            in_use = list(self._in_use)
        for sock in in_use:
            shut(sock)

    def _connections(self) -> dict[tuple[str, str, int], http.client.HTTPConnection]:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        return conns

    def _connection(self, where: tuple[str, str, int], url: str, budget: float) -> http.client.HTTPConnection:
        conns = self._connections()
        conn = conns.get(where)
        if conn is not None and conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            conn.close()  # an idle keep-alive connection the server closed (or sent junk on)
        if conn is None:
            scheme, host, port = where
            if scheme == "https":
                import ssl  # only for https endpoints; verified as boto3 does, AWS_CA_BUNDLE included

                context = ssl.create_default_context(cafile=os.environ.get("AWS_CA_BUNDLE") or None)
                conn = http.client.HTTPSConnection(host, port, timeout=self.connect_timeout, context=context)
            else:
                conn = http.client.HTTPConnection(host, port, timeout=self.connect_timeout)
            conns[where] = conn
        if conn.sock is None:
            conn.timeout = min(self.connect_timeout, budget)
            try:
                conn.connect()
            except TimeoutError:
                conn.close()
                raise ConnectTimeoutError(f'Connect timeout on endpoint URL: "{url}"') from None
            except OSError as exc:
                conn.close()
                raise EndpointConnectionError(f'Could not connect to the endpoint URL: "{url}" ({exc})') from None
        assert conn.sock is not None
        # A read waits at most this long; the deadline itself is kept by abort() (a server
        # dripping a byte within every read timeout would otherwise hold the exchange forever).
        conn.sock.settimeout(min(self.read_timeout, budget))
        return conn

    def _drop(self, where: tuple[str, str, int]) -> None:
        conn = self._connections().pop(where, None)
        if conn is not None:
            conn.close()

    @contextlib.contextmanager
    def exchange(
        self, method: str, loc: S3Url, headers: dict[str, str], *, deadline: float | None = None
    ) -> Iterator[http.client.HTTPResponse]:
        """Send a signed request and yield its 2xx response (raises :class:`HttpStatusError`
        otherwise); on exit a response not read to its end costs its connection. After
        :meth:`abort` (or past ``deadline``, monotonic seconds) it raises ``TimeoutError``."""
        scheme, host, port, host_header, path = target(self.config, loc.bucket, loc.key)
        where = (scheme, host, port)
        url = f"{scheme}://{host_header}{path}"
        if self._credentials is None:
            signed = {**headers, "host": host_header}
        else:
            signed = sigv4.sign(method, host_header, path, headers, self._credentials, self.config.region or "")
        budget = float("inf") if deadline is None else deadline - time.monotonic()
        if budget <= 0 or self._aborted:
            raise ReadTimeoutError(f'Deadline passed before a request to "{url}"')
        conn = self._connection(where, url, budget)
        sock = conn.sock
        with self._lock:
            if self._aborted:
                self._drop(where)
                raise ReadTimeoutError(f'Deadline passed before a request to "{url}"')
            self._in_use.add(sock)
        try:
            yield from self._exchange(conn, where, url, method, path, signed)
        finally:
            with self._lock:
                self._in_use.discard(sock)

    def _exchange(
        self, conn: http.client.HTTPConnection, where: tuple[str, str, int], url: str, method: str, path: str, signed
    ) -> Iterator[http.client.HTTPResponse]:
        try:
            conn.request(method, path, headers=signed)
            resp = conn.getresponse()
        except TimeoutError:
            self._drop(where)
            raise ReadTimeoutError(f'Read timeout on endpoint URL: "{url}"') from None
        except (ConnectionError, http.client.HTTPException):
            self._drop(where)
            raise
        except OSError as exc:
            self._drop(where)
            raise EndpointConnectionError(f'Connection to the endpoint URL failed: "{url}" ({exc})') from None
        try:
            if not 200 <= resp.status < 300:
                body = resp.read() if method == "HEAD" else resp.read(MAX_ERROR_BODY)  # HEAD: b""
                raise _error(resp.status, resp.reason or "", body)
            yield resp
        finally:
            if not resp.isclosed():
                resp.close()
                self._drop(where)
