"""S3 access for ``parcomm bcast``: HEAD, ranged GETs streamed to a callback, small PUTs.

botocore's own retries are off; :class:`S3Client` retries 5xx, 503 SlowDown,
connection errors, timeouts and truncated bodies itself, with exponential backoff
and full jitter, bounded in attempts and in time, and a ranged GET that fails
midway resumes from the last whole chunk it delivered.

Errors are :class:`S3Error` subclasses whose message names the URL, so the CLI can
print them as one line: :class:`ObjectNotFound`, :class:`AccessDenied`,
:class:`ObjectChanged`, :class:`StorageUnavailable` (retries exhausted).

One :class:`S3Client` may be shared by threads: boto3 clients are thread safe and
the client is built once, under a lock, from a private session.

HEAD and ranged GETs skip boto3 when the configuration allows it (explicit keys or unsigned,
see :func:`.s3http.eligible`): they are signed by :mod:`.sigv4` and sent over ``http.client``
(:mod:`.s3http`), so a node that only reads never imports botocore (~0.2 CPU s per process here).
Profiles, credential chains, PUTs and bucket creation stay on boto3.
"""

from __future__ import annotations

import http.client
import mmap
import os
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from . import s3http

DEFAULT_CHUNK_SIZE = 256 * 1024

ChunkCallback = Callable[[int, memoryview], None]
"""``on_chunk(offset, data)``: ``data`` is the object's bytes at ``offset``, a view of
a buffer the client reuses: valid only during the call (copy what you keep)."""


# -- errors --------------------------------------------------------------------
class S3Error(Exception):
    """A storage error worth one line to the user; ``url`` is the object concerned."""

    def __init__(self, url: str, message: str) -> None:
        super().__init__(f"{url}: {message}")
        self.url = url


class InvalidS3Url(S3Error, ValueError):
    pass


class ObjectNotFound(S3Error):
    pass


class AccessDenied(S3Error):
    pass


class ObjectChanged(S3Error):
    """The object's ETag is no longer the one the caller asked for."""


class StorageUnavailable(S3Error):
    """Retryable failures went on past the retry budget."""


class DeadlineExceeded(S3Error):
    """The job's deadline passed (``S3Client(deadline=)``): every request in flight was cut off."""


class TruncatedBody(Exception):
    """The body ended before the requested range did (retryable)."""


class _CallbackFailed(Exception):
    """Carries an exception raised by the caller's callback through the retry loop."""


# -- urls and configuration ----------------------------------------------------
@dataclass(frozen=True)
class S3Url:
    bucket: str
    key: str

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


def parse_s3_url(url: str | S3Url) -> S3Url:
    """``s3://bucket/key`` -> :class:`S3Url` (the key may contain slashes)."""
    if isinstance(url, S3Url):
        return url
    if not url.startswith("s3://"):
        raise InvalidS3Url(url, "not an S3 URL (expected s3://BUCKET/KEY)")
    bucket, sep, key = url[len("s3://") :].partition("/")
    if not bucket or not sep or not key:
        raise InvalidS3Url(url, "expected s3://BUCKET/KEY with a non-empty bucket and key")
    return S3Url(bucket, key)


@dataclass(frozen=True)
class S3Config:
    """Where and as whom to connect; ``None`` fields fall back to boto3's own chain.

    ``profile`` names a profile of ``~/.aws/config`` / ``~/.aws/credentials`` (its keys,
    region and endpoint), as ``aws --profile`` does; ``anonymous`` sends unsigned
    requests, as ``aws --no-sign-request`` does, for public buckets.
    """

    endpoint_url: str | None = None
    access_key: str | None = None
    # Secrets stay out of repr(): a config may end up in a log line or a traceback.
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    region: str | None = None
    profile: str | None = None
    anonymous: bool = False

    @classmethod
    def from_env(
        cls,
        endpoint_url: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        region: str | None = None,
        environ: dict[str, str] | None = None,
        *,
        profile: str | None = None,
        anonymous: bool = False,
    ) -> "S3Config":
        """Explicit arguments first, then the usual AWS environment variables.

        As with the AWS CLI, an explicit profile beats the environment's keys, and an
        anonymous client uses no keys at all.
        """
        env = os.environ if environ is None else environ
        if profile is not None and anonymous:
            raise ValueError("--profile and --no-sign-request exclude each other: choose one")
        env_keys = profile is None and not anonymous
        # A session token from the environment belongs to the environment's keys only.
        token = env.get("AWS_SESSION_TOKEN") if access_key is None and env_keys else None
        region = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        return cls(
            endpoint_url=endpoint_url or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
            access_key=None
            if anonymous
            else access_key or (env.get("AWS_ACCESS_KEY_ID") if env_keys else None) or None,
            secret_key=None
            if anonymous
            else secret_key or (env.get("AWS_SECRET_ACCESS_KEY") if env_keys else None) or None,
            session_token=token or None,
            # A profile may set its own region; without one, us-east-1 as boto3 users expect.
            region=region or (None if profile else "us-east-1"),
            profile=profile,
            anonymous=anonymous,
        )

    def describe(self) -> str:
        """Who the requests are made as, for error messages (never a key)."""
        if self.anonymous:
            return "unsigned (--no-sign-request)"
        if self.profile:
            return f"profile {self.profile!r}"
        return "the environment's credentials" if self.access_key else "boto3's default credential chain"


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: sleep U(0, min(max_delay, base * 2**n)).

    ``max_attempts`` bounds consecutive failures that made no progress;
    ``total_timeout`` bounds the time one call may spend, retries included.
    """

    max_attempts: int = 10
    base_delay: float = 0.1
    max_delay: float = 5.0
    total_timeout: float = 300.0

    def delay(self, failures: int, rng: random.Random) -> float:
        return rng.uniform(0.0, min(self.max_delay, self.base_delay * (2 ** max(0, failures - 1))))


@dataclass(frozen=True)
class ObjectInfo:
    size: int
    etag: str  # without the surrounding quotes
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class S3Stats:
    """Counters since the client was made (all threads together)."""

    requests: int = 0
    bytes_received: int = 0  # body bytes read, including those discarded by retries
    retries: int = 0
    errors: dict[str, int] = field(default_factory=dict)


# -- classification of failures -----------------------------------------------
_RETRYABLE_CODES = {
    "SlowDown",
    "ServiceUnavailable",
    "InternalError",
    "RequestTimeout",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "503",
    "500",
}
_NOT_FOUND_CODES = {"NoSuchKey", "NoSuchBucket", "NotFound", "404"}
# versitygw answers an unknown access key with 404 XAdminUserNotFound (AWS: 403 InvalidAccessKeyId).
_DENIED_CODES = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "AllAccessDisabled",
    "XAdminUserNotFound",
    "403",
    "401",
}


def _retryable_exceptions() -> tuple[type[BaseException], ...]:
    """What a retry may cure; botocore's and urllib3's kinds only once they are loaded (an
    exception of theirs cannot exist before), so the boto3-free path never imports them."""
    found: tuple[type[BaseException], ...] = (
        ConnectionError,
        TimeoutError,
        TruncatedBody,
        http.client.HTTPException,  # IncompleteRead from the raw body
    )
    bex = sys.modules.get("botocore.exceptions")
    if bex is not None:
        found += (bex.ConnectionError, bex.HTTPClientError, bex.ResponseStreamingError, bex.IncompleteReadError)
    uex = sys.modules.get("urllib3.exceptions")
    if uex is not None:
        found += (uex.HTTPError,)
    return found


def _error_code(exc: Any) -> tuple[str, int]:
    err = exc.response.get("Error", {})
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return str(err.get("Code", status)), int(status or 0)


# -- the client ----------------------------------------------------------------
class S3Client:
    """Thread-safe S3 access with our retry policy (botocore's is disabled)."""

    def __init__(
        self,
        config: S3Config | None = None,
        *,
        retry: RetryPolicy | None = None,
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        max_pool_connections: int = 16,
        seed: int | None = None,
        lean: bool | None = None,
        deadline: float | None = None,
    ) -> None:
        """``lean``: HEAD and GET without boto3 (:mod:`.s3http`); ``None`` (default) whenever
        the configuration allows it, ``False`` never, ``True`` always (else ValueError).

        ``deadline`` (``time.monotonic()`` seconds): no request outlives it. Per-read
        timeouts cannot bound a server that drips a byte now and then, so at the deadline
        a watchdog shuts down every socket in use; calls then raise :class:`DeadlineExceeded`."""
        self.config = config if config is not None else S3Config.from_env()
        self.retry = retry or RetryPolicy()
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_pool_connections = max_pool_connections
        self.stats = S3Stats()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._client: Any = None
        if lean and not s3http.eligible(self.config):
            raise ValueError("this S3 configuration needs boto3 (a profile, a credential chain, a proxy...)")
        use_lean = s3http.eligible(self.config) if lean is None else lean
        self._lean = s3http.Transport(self.config, connect_timeout, read_timeout) if use_lean else None
        self.deadline = deadline
        self._aborted = False
        self._reading: set[Any] = set()  # sockets of boto3 responses being read (the lean ones: Transport)
        if deadline is not None:
            self._watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), self.abort)
            self._watchdog.daemon = True
            self._watchdog.start()

    def _remaining(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def _past_deadline(self) -> bool:
        return self._aborted or self._remaining() <= 0

    def abort(self) -> None:
        """Cut off every request in flight and refuse new ones (the deadline, or the node
        is failing): a blocked read returns at once. Idempotent; the client is done after."""
        with self._lock:
            self._aborted = True
            reading = list(self._reading)
        if self._lean is not None:
            self._lean.abort()
        for sock in reading:
            s3http.shut(sock)

    # boto3 is imported lazily: it costs ~0.3 s and the simulator never needs it.
    def _boto(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3.session
                import botocore
                import botocore.exceptions as bex
                from botocore.config import Config

                cfg = self.config
                try:
                    session = boto3.session.Session(profile_name=cfg.profile)
                except bex.ProfileNotFound:
                    raise S3Error(
                        f"--profile {cfg.profile}",
                        "no such profile in the AWS config files (~/.aws/config, ~/.aws/credentials, "
                        "or AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE)",
                    ) from None
                unsigned = {"signature_version": botocore.UNSIGNED} if cfg.anonymous else {}
                self._client = session.client(
                    "s3",
                    endpoint_url=cfg.endpoint_url,
                    aws_access_key_id=cfg.access_key,
                    aws_secret_access_key=cfg.secret_key,
                    aws_session_token=cfg.session_token,
                    region_name=cfg.region,
                    config=Config(
                        **unsigned,
                        retries={"total_max_attempts": 1, "mode": "standard"},
                        connect_timeout=min(self.connect_timeout, max(1.0, self._remaining())),
                        read_timeout=min(self.read_timeout, max(1.0, self._remaining())),
                        max_pool_connections=self.max_pool_connections,
                        # A custom endpoint (versitygw, MinIO...) rarely has virtual-host DNS.
                        s3={"addressing_style": "path" if cfg.endpoint_url else "auto"},
                        # We verify pieces ourselves; skip CRC work on every GET/PUT.
                        request_checksum_calculation="when_required",
                        response_checksum_validation="when_required",
                    ),
                )
            return self._client

    def _count(self, requests: int = 0, received: int = 0, retries: int = 0, error: str | None = None) -> None:
        with self._lock:
            self.stats.requests += requests
            self.stats.bytes_received += received
            self.stats.retries += retries
            if error:
                self.stats.errors[error] = self.stats.errors.get(error, 0) + 1

    def _jitter(self, failures: int) -> float:
        with self._lock:
            return self.retry.delay(failures, self._rng)

    # -- the retry loop ----------------------------------------------------
    def _call(self, url: str, what: str, attempt: Callable[[], Any], progress: Callable[[], int] = lambda: 0) -> Any:
        """Run ``attempt`` until it succeeds, a permanent error, or the budget ends."""
        policy = self.retry
        started = time.monotonic()
        failures = 0
        total_failures = 0
        while True:
            before = progress()
            if self._past_deadline():
                raise DeadlineExceeded(url, f"{what} cut off at the job's deadline")
            try:
                return attempt()
            except _CallbackFailed as exc:
                raise exc.__cause__ from None  # type: ignore[misc]
            except Exception as exc:
                if self._past_deadline():  # whatever the error looks like: its cause is the cut-off
                    raise DeadlineExceeded(url, f"{what} cut off at the job's deadline") from None
                last = self._failure(url, what, exc)
                if last is None:
                    raise
            # Progress made by the failed attempt resets the consecutive-failure count.
            failures = 1 if progress() > before else failures + 1
            total_failures += 1
            elapsed = time.monotonic() - started
            pause = self._jitter(failures)
            if pause >= self._remaining():
                raise DeadlineExceeded(url, f"{what} failed {total_failures} times; last error: {last}")
            if failures >= policy.max_attempts or elapsed + pause > policy.total_timeout:
                raise StorageUnavailable(
                    url, f"{what} failed {total_failures} times in {elapsed:.1f} s; last error: {last}"
                ) from None
            self._count(retries=1)
            time.sleep(pause)

    def _failure(self, url: str, what: str, exc: Exception) -> str | None:
        """Raise the permanent error ``exc`` means, or return how to name it if it is worth a
        retry; ``None``: not ours to handle (the caller re-raises it)."""
        bex = sys.modules.get("botocore.exceptions")  # a botocore error implies botocore loaded
        if bex is not None and isinstance(exc, bex.NoCredentialsError):
            raise AccessDenied(
                url,
                f"no S3 credentials found for {self.config.describe()} (set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, choose a --profile, or --no-sign-request for a public bucket)",
            ) from None
        if isinstance(exc, s3http.HttpStatusError):
            code, status, message = exc.code, exc.status, exc.message
        elif bex is not None and isinstance(exc, bex.ClientError):
            code, status = _error_code(exc)
            message = str(exc.response.get("Error", {}).get("Message", ""))
        elif isinstance(exc, _retryable_exceptions()):
            self._count(error=type(exc).__name__)
            return f"{type(exc).__name__}: {exc}"
        else:
            return None
        self._count(error=code)
        if code in _DENIED_CODES or status in (401, 403):
            raise AccessDenied(
                url,
                f"access denied ({code}) to requests made as {self.config.describe()}: "
                "check the credentials and the endpoint",
            ) from None
        if code in _NOT_FOUND_CODES or status == 404:
            what_missing = "bucket" if code == "NoSuchBucket" else "object"
            raise ObjectNotFound(url, f"{what_missing} not found") from None
        if code == "PreconditionFailed" or status == 412:
            raise ObjectChanged(url, "the object changed during the transfer (ETag differs)") from None
        if not (code in _RETRYABLE_CODES or status >= 500 or status == 429):
            raise S3Error(url, f"{what} failed: {code} {message}".rstrip()) from None
        return f"{code} (HTTP {status})"

    # -- operations --------------------------------------------------------
    def head(self, url: str | S3Url) -> ObjectInfo:
        """Size, ETag (unquoted) and user metadata of an object."""
        loc = parse_s3_url(url)

        def attempt() -> ObjectInfo:
            if self._lean is not None:
                return self._head_lean(loc)
            from botocore.exceptions import ClientError

            self._count(requests=1)
            try:
                resp = self._boto().head_object(Bucket=loc.bucket, Key=loc.key)
            except ClientError as exc:
                code, status = _error_code(exc)
                if status == 404 and code in ("404", "NotFound"):
                    # A HEAD error has no body, so its reason (no key? no bucket? unknown
                    # access key?) is lost: a 1-byte GET raises the informative error.
                    self._count(requests=1)
                    self._boto().get_object(Bucket=loc.bucket, Key=loc.key, Range="bytes=0-0")["Body"].close()
                raise
            return ObjectInfo(
                int(resp["ContentLength"]), resp.get("ETag", "").strip('"'), dict(resp.get("Metadata", {}))
            )

        return self._call(str(loc), "HEAD", attempt)

    def _head_lean(self, loc: S3Url) -> ObjectInfo:
        assert self._lean is not None
        self._count(requests=1)
        try:
            with self._lean.exchange("HEAD", loc, {}, deadline=self.deadline) as resp:
                resp.read()  # nothing: ends the exchange, the connection stays open
                headers = resp.getheaders()
        except s3http.HttpStatusError as exc:
            if exc.status == 404 and exc.code == "404":
                # As below: a 1-byte GET names what is missing (key, bucket, access key).
                self._count(requests=1)
                with self._lean.exchange("GET", loc, {"Range": "bytes=0-0"}, deadline=self.deadline):
                    pass
            raise
        size = etag = None
        metadata: dict[str, str] = {}
        for name, value in headers:
            lower = name.lower()
            if lower == "content-length":
                size = value.strip()
            elif lower == "etag":
                etag = value.strip().strip('"')
            elif lower.startswith("x-amz-meta-"):
                metadata[lower[len("x-amz-meta-") :]] = value
        if size is None or not size.isdigit() or len(size) > 20:
            raise S3Error(str(loc), f"HEAD answered without a valid Content-Length ({(size or '')[:40]!r})")
        return ObjectInfo(int(size), etag or "", metadata)

    def get_range(
        self,
        url: str | S3Url,
        start: int,
        end: int,
        on_chunk: ChunkCallback,
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        etag: str | None = None,
    ) -> int:
        """Fetch bytes ``[start, end)`` and hand them to ``on_chunk(offset, data)``.

        Chunks are exactly ``chunk_size`` bytes (the last may be shorter) and
        aligned on ``start``, so with ``chunk_size`` = piece size and a piece-aligned
        ``start`` each callback is one piece. A chunk is delivered once; a retry
        resumes after the last delivered chunk. ``etag`` (If-Match) makes a changed
        object an :class:`ObjectChanged` error instead of mixed data. Returns the
        number of bytes delivered (``end - start``).
        """
        loc = parse_s3_url(url)
        if start < 0 or end < start:
            raise ValueError(f"bad range [{start}, {end})")
        if chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        if end == start:
            return 0  # S3 cannot express an empty range (and a 0-byte object has none)
        state = {"next": start}

        def attempt() -> int:
            self._fetch(loc, state, end, on_chunk, chunk_size, etag)
            return end - start

        return self._call(str(loc), f"GET bytes {start}-{end - 1}", attempt, progress=lambda: state["next"])

    def _fetch(
        self, loc: S3Url, state: dict[str, int], end: int, on_chunk: ChunkCallback, chunk_size: int, etag: str | None
    ) -> None:
        if self._lean is not None:
            return self._fetch_lean(loc, state, end, on_chunk, chunk_size, etag)
        offset = state["next"]
        kwargs: dict[str, Any] = {"Bucket": loc.bucket, "Key": loc.key, "Range": f"bytes={offset}-{end - 1}"}
        if etag:
            kwargs["IfMatch"] = f'"{etag}"'
        self._count(requests=1)
        resp = self._boto().get_object(**kwargs)
        body = resp["Body"]
        try:
            self._check_content_range(loc, resp.get("ContentRange") or "", offset, end)
            # The bytes go from the socket straight into one reused buffer (recv_into):
            # botocore's and urllib3's layers would allocate and copy every chunk twice.
            raw = getattr(getattr(body, "_raw_stream", None), "_fp", None)  # http.client's response
            if raw is None or not hasattr(raw, "readinto") or resp.get("ContentEncoding"):
                raw = body  # not the stack we know, or encoded: the portable (copying) path
            sock = getattr(getattr(getattr(raw, "fp", None), "raw", None), "_sock", None)  # for abort()
            with self._lock:
                if self._aborted:
                    raise TimeoutError("aborted")
                if sock is not None:
                    self._reading.add(sock)
            try:
                self._deliver(raw, state, end, on_chunk, chunk_size)
            finally:
                with self._lock:
                    self._reading.discard(sock)
        finally:
            # Closing drops a half-read connection instead of returning it to the pool.
            body.close()

    def _fetch_lean(
        self, loc: S3Url, state: dict[str, int], end: int, on_chunk: ChunkCallback, chunk_size: int, etag: str | None
    ) -> None:
        assert self._lean is not None
        offset = state["next"]
        headers = {"Range": f"bytes={offset}-{end - 1}"}
        if etag:
            headers["If-Match"] = f'"{etag}"'
        self._count(requests=1)
        with self._lean.exchange("GET", loc, headers, deadline=self.deadline) as resp:
            if resp.status != 206 and offset > 0:
                raise S3Error(str(loc), f"the server ignored the Range header (HTTP {resp.status} to bytes {offset}-)")
            self._check_content_range(loc, resp.getheader("Content-Range") or "", offset, end)
            try:
                self._deliver(resp, state, end, on_chunk, chunk_size)
            except TimeoutError:
                raise s3http.ReadTimeoutError(f"Read timeout on the body of {loc}") from None

    def _deliver(self, raw: Any, state: dict[str, int], end: int, on_chunk: ChunkCallback, chunk_size: int) -> None:
        """Read ``[state["next"], end)`` from ``raw`` into one reused buffer, a chunk at a time."""
        offset = state["next"]
        # Page-aligned (an anonymous mapping, not a bytearray): an O_DIRECT write can take it as is.
        buf = memoryview(mmap.mmap(-1, max(1, min(chunk_size, end - offset))))
        while offset < end:
            want = min(chunk_size, end - offset)
            got = self._read_into(raw, buf[:want])
            if got < want:
                raise TruncatedBody(f"body ended at byte {offset + got}, expected {end}")
            try:
                on_chunk(offset, buf[:want])
            except BaseException as exc:
                raise _CallbackFailed() from exc
            offset += want
            state["next"] = offset

    @staticmethod
    def _check_content_range(loc: S3Url, content_range: str, offset: int, end: int) -> None:
        """``bytes FIRST-LAST/TOTAL`` must start at ``offset``; a range past the end is an error."""
        if not content_range:
            return
        if not content_range.startswith(f"bytes {offset}-"):
            raise TruncatedBody(f"server answered {content_range!r} to a request for bytes {offset}-{end - 1}")
        total = content_range.rpartition("/")[2]
        if total.isdigit() and end > int(total):
            raise S3Error(str(loc), f"range ends at byte {end}, beyond the end of the object ({total} bytes)")

    def _read_into(self, body: Any, view: memoryview) -> int:
        """Fill ``view`` from the body; fewer bytes only if the body ended."""
        got = 0
        while got < len(view):
            n = body.readinto(view[got:])
            if not n:
                break
            got += n
        self._count(received=got)
        return got

    def get_bytes(self, url: str | S3Url, start: int = 0, end: int | None = None, *, etag: str | None = None) -> bytes:
        """The bytes ``[start, end)`` (``end=None``: to the end of the object) in memory."""
        if end is None:
            end = self.head(url).size
        out = bytearray(end - start)

        def keep(offset: int, data: bytes) -> None:
            out[offset - start : offset - start + len(data)] = data

        self.get_range(url, start, end, keep, etag=etag)
        return bytes(out)

    def put_bytes(
        self,
        url: str | S3Url,
        data: bytes,
        metadata: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> str:
        """Upload a small object in one PUT (retried: a PUT is idempotent); returns its ETag."""
        loc = parse_s3_url(url)

        def attempt() -> str:
            self._count(requests=1)
            resp = self._boto().put_object(
                Bucket=loc.bucket, Key=loc.key, Body=data, Metadata=metadata or {}, ContentType=content_type
            )
            return str(resp.get("ETag", "")).strip('"')

        return self._call(str(loc), "PUT", attempt)

    def create_bucket(self, bucket: str) -> None:
        url = f"s3://{bucket}/"
        self._call(url, "CreateBucket", lambda: self._boto().create_bucket(Bucket=bucket))
