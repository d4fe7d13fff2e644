"""A storage-variability proxy: an asyncio HTTP reverse proxy on 127.0.0.1 in front
of an S3 server (versitygw) that paces GET bodies and injects S3 faults.

Requests are forwarded byte for byte (the Host header included), so a client signs
its SigV4 requests for the *proxy's* address and the server, which checks the
signature against the Host header it receives, accepts them. Per request:

* a GET body is sent at a rate drawn from ``profile`` — ``[(probability,
  bytes_per_s), ...]`` or a callable ``rng -> bytes_per_s`` — after an optional
  first-byte latency; ``aggregate_rate`` caps the sum over all GETs (the storage's
  total egress, ~50 MB/s for 8 nodes in the paper's Fig. 4);
* with probability ``error_rate`` the request is answered ``503 SlowDown`` with
  an S3 XML error body, without reaching the server;
* with probability ``truncate_rate`` a GET body is cut short: ``"drop"`` closes
  the connection midway (Content-Length unchanged), ``"short"`` sends a smaller
  Content-Length than the range asked for.

:class:`PacingProxy` runs in a thread as a context manager (tests, the ``--local``
demo) or inside a running loop (``await start()`` / ``await stop()``);
:func:`main` is the ``parcomm bcast proxy`` entry point. :attr:`PacingProxy.stats`
counts requests and the body bytes served (origin egress).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import random
import signal
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence
from urllib.parse import urlsplit

RateProfile = Sequence[tuple[float, float]] | Callable[[random.Random], float]

MAX_HEADER_BYTES = 64 * 1024
MAX_RECORDED_RATES = 100_000  # keep the stats bounded on long runs


def paper_rate(rng: random.Random) -> float:
    """One GET's rate drawn from the simulator's ``chiba2010`` profile (seed 004
    Fig. 1-3, its modes and sources in :mod:`.storage_model`): one profile, not a copy."""
    from .storage_model import load_profile

    return load_profile("chiba2010").draw_request_rate(rng)


def parse_rate(text: str) -> float:
    """``"10MB"`` (per second), ``"512KiB"``, ``"2e6"`` -> bytes per second."""
    from ...platform.units import parse_size

    try:
        return float(parse_size(text.strip().removesuffix("/s").removesuffix("/S")))
    except ValueError:
        raise ValueError(f"bad rate {text!r} (use e.g. 10MB, 512KiB, 2e6: bytes per second)") from None


def parse_profile(text: str) -> RateProfile:
    """``"0.6:5MB,0.4:10MB"`` -> ``[(0.6, 5e6), (0.4, 1e7)]``; ``"paper"`` -> :func:`paper_rate`."""
    if text.strip().lower() == "paper":
        return paper_rate
    modes = []
    for item in text.split(","):
        prob, sep, rate = item.partition(":")
        if not sep:
            raise ValueError(f"bad profile mode {item!r} (expected PROBABILITY:RATE)")
        modes.append((float(prob), parse_rate(rate)))
    return modes


def rate_sampler(profile: RateProfile | None) -> Callable[[random.Random], float | None]:
    """A function drawing one rate (None = unpaced) per request from ``profile``."""
    if profile is None:
        return lambda rng: None
    if callable(profile):
        return profile
    modes = list(profile)
    total = sum(p for p, _ in modes)
    if not modes or total <= 0 or any(p < 0 or r <= 0 for p, r in modes):
        raise ValueError("a profile needs modes with probabilities >= 0 (sum > 0) and rates > 0")
    cumulative, acc = [], 0.0
    for p, _ in modes:
        acc += p / total
        cumulative.append(acc)
    rates = [r for _, r in modes]
    return lambda rng: rates[min(bisect.bisect_left(cumulative, rng.random()), len(rates) - 1)]


@dataclass
class ProxyStats:
    requests: int = 0
    get_requests: int = 0
    bytes_served: int = 0  # GET body bytes sent to clients: the origin's egress
    injected_errors: int = 0
    truncated: int = 0
    upstream_errors: int = 0
    rates: list[float] = field(default_factory=list)  # rate drawn for each paced GET


class _Http:
    """Just enough HTTP/1.1 framing to relay one message."""

    @staticmethod
    async def read_head(reader: asyncio.StreamReader) -> tuple[str, list[tuple[str, str]]] | None:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return None  # the peer closed between messages
        lines = raw.decode("latin-1").split("\r\n")
        headers = []
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers.append((name.strip(), value.strip()))
        return lines[0], headers

    @staticmethod
    def get(headers: list[tuple[str, str]], name: str) -> str | None:
        name = name.lower()
        for k, v in headers:
            if k.lower() == name:
                return v
        return None

    @staticmethod
    def encode(first_line: str, headers: list[tuple[str, str]]) -> bytes:
        return (first_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode("latin-1")

    @staticmethod
    async def relay_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copy a chunked body as is, up to and including its trailers."""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            writer.write(size_line)
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while True:  # trailers end with an empty line
                    line = await reader.readuntil(b"\r\n")
                    writer.write(line)
                    if line == b"\r\n":
                        return
            writer.write(await reader.readexactly(size + 2))
            await writer.drain()


def slow_down_response(resource: str) -> bytes:
    """A real S3-style ``503 SlowDown`` response."""
    request_id = uuid.uuid4().hex[:16].upper()
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>"
        f"<Resource>{resource}</Resource><RequestId>{request_id}</RequestId></Error>"
    ).encode()
    headers = [
        ("Content-Type", "application/xml"),
        ("Content-Length", str(len(body))),
        ("x-amz-request-id", request_id),
        ("Retry-After", "1"),
    ]
    return _Http.encode("HTTP/1.1 503 Slow Down", headers) + body


class PacingProxy:
    """Reverse proxy to ``upstream`` (``http://host:port``) with pacing and faults."""

    def __init__(
        self,
        upstream: str,
        *,
        profile: RateProfile | None = None,
        first_byte_latency: float = 0.0,
        aggregate_rate: float | None = None,
        error_rate: float = 0.0,
        truncate_rate: float = 0.0,
        truncate_mode: str = "drop",
        fault_methods: Sequence[str] = ("GET",),
        seed: int | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_connections: int = 256,
        upstream_timeout: float = 30.0,
        idle_timeout: float = 120.0,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be http://HOST:PORT, not {upstream!r}")
        if truncate_mode not in ("drop", "short"):
            raise ValueError("truncate_mode is 'drop' or 'short'")
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.draw_rate = rate_sampler(profile)
        self.first_byte_latency = first_byte_latency
        self.aggregate_rate = aggregate_rate
        self._aggregate_free_at = 0.0  # when the shared egress is next free (monotonic time)
        self.error_rate = error_rate
        self.truncate_rate = truncate_rate
        self.truncate_mode = truncate_mode
        self.fault_methods = {m.upper() for m in fault_methods}
        self.host, self.port = host, port
        self.upstream_timeout = upstream_timeout
        self.idle_timeout = idle_timeout
        self.stats = ProxyStats()
        self._rng = random.Random(seed)
        self._slots = asyncio.Semaphore(max_connections)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def snapshot(self) -> ProxyStats:
        """A copy of the counters (safe to read from another thread)."""
        return ProxyStats(**{k: (list(v) if isinstance(v, list) else v) for k, v in asdict(self.stats).items()})

    # -- async lifecycle ---------------------------------------------------
    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_client, self.host, self.port, limit=MAX_HEADER_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- thread lifecycle (context manager) --------------------------------
    def __enter__(self) -> "PacingProxy":
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # reported to the caller below
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="parcomm-bcast-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(timeout=10.0):
            raise RuntimeError("proxy did not start within 10 s")
        if failure:
            raise failure[0]
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10.0)
            self._thread = None

    # -- one client connection ---------------------------------------------
    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            async with self._slots:
                while await self._one_request(reader, writer):
                    pass
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            asyncio.TimeoutError,
            ValueError,
        ):
            pass  # a broken or malformed exchange: drop the connection
        except asyncio.CancelledError:
            pass  # stop(): end quietly (asyncio's stream callback would log a re-raised cancel)
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Relay one request/response; False when the client connection must end."""
        head = await asyncio.wait_for(_Http.read_head(reader), self.idle_timeout)
        if head is None:
            return False
        request_line, headers = head
        method, target, _ = request_line.split(" ", 2)
        self.stats.requests += 1
        is_get = method.upper() == "GET"
        self.stats.get_requests += is_get
        faulty = method.upper() in self.fault_methods

        if (_Http.get(headers, "expect") or "").lower() == "100-continue":
            # Let the client send its body now; the server will not be asked to continue.
            headers = [(k, v) for k, v in headers if k.lower() != "expect"]
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await writer.drain()
        body = await self._read_request_body(reader, headers)
        if faulty and self.error_rate > 0 and self._rng.random() < self.error_rate:
            self.stats.injected_errors += 1
            writer.write(slow_down_response(target.split("?")[0]))
            await writer.drain()
            return True

        up_reader, up_writer = await asyncio.wait_for(
            asyncio.open_connection(self.upstream_host, self.upstream_port), self.upstream_timeout
        )
        try:
            # One upstream connection per request: simple, and cheap on loopback.
            forward = [(k, v) for k, v in headers if k.lower() not in ("connection", "keep-alive")]
            up_writer.write(_Http.encode(request_line, forward + [("Connection", "close")]))
            if isinstance(body, bytes):
                up_writer.write(body)
            else:
                await _Http.relay_chunked(reader, up_writer)
            await up_writer.drain()
            head = await asyncio.wait_for(_Http.read_head(up_reader), self.upstream_timeout)
            while head is not None and head[0].split(" ", 2)[1].startswith("1"):
                head = await asyncio.wait_for(_Http.read_head(up_reader), self.upstream_timeout)  # skip interim 1xx
            if head is None:
                self.stats.upstream_errors += 1
                return False
            return await self._relay_response(method.upper(), head, up_reader, writer, paced=is_get)
        finally:
            up_writer.close()

    async def _read_request_body(self, reader: asyncio.StreamReader, headers: list[tuple[str, str]]) -> bytes | None:
        """The request body if sized by Content-Length; None if chunked (relayed later)."""
        if (_Http.get(headers, "transfer-encoding") or "").lower() == "chunked":
            return None
        length = int(_Http.get(headers, "content-length") or 0)
        return await reader.readexactly(length) if length else b""

    async def _relay_response(
        self,
        method: str,
        head: tuple[str, list[tuple[str, str]]],
        up_reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        paced: bool,
    ) -> bool:
        status_line, headers = head
        status = int(status_line.split(" ", 2)[1])
        length_text = _Http.get(headers, "content-length")
        chunked = (_Http.get(headers, "transfer-encoding") or "").lower() == "chunked"
        no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
        # Keep the client connection only if the response is self-delimiting.
        keep = no_body or chunked or length_text is not None
        headers = [(k, v) for k, v in headers if k.lower() not in ("connection", "keep-alive")]
        headers.append(("Connection", "keep-alive" if keep else "close"))

        if no_body or chunked or not (paced and 200 <= status < 300 and length_text is not None):
            writer.write(_Http.encode(status_line, headers))
            if chunked and not no_body:
                await _Http.relay_chunked(up_reader, writer)
            elif not no_body:
                await self._copy(
                    up_reader, writer, int(length_text) if length_text is not None else None, None, count=paced
                )
            await writer.drain()
            return keep

        length = int(length_text)  # a successful GET with a sized body: pace it, maybe fault it
        send = length
        drop = False
        if length > 0 and self.truncate_rate > 0 and self._rng.random() < self.truncate_rate:
            self.stats.truncated += 1
            send = self._rng.randrange(length)
            if self.truncate_mode == "short":
                headers = [(k, str(send) if k.lower() == "content-length" else v) for k, v in headers]
            else:
                drop = True
        rate = self.draw_rate(self._rng)
        if rate is not None and len(self.stats.rates) < MAX_RECORDED_RATES:
            self.stats.rates.append(rate)
        if self.first_byte_latency > 0:
            await asyncio.sleep(self.first_byte_latency)
        writer.write(_Http.encode(status_line, headers))
        await self._copy(up_reader, writer, send, rate, count=True)
        await writer.drain()
        return not drop  # after a dropped body the client must see the connection close

    async def _copy(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, length: int | None, rate: float | None, count: bool
    ) -> None:
        """Copy ``length`` bytes (None: to EOF), at ``rate`` bytes/s if given."""
        # Slices of ~20 ms at the paced rate keep the pacing smooth without a sleep per byte.
        step = 64 * 1024 if rate is None else int(max(1024, min(256 * 1024, rate / 50)))
        started = time.monotonic()
        sent = 0
        while length is None or sent < length:
            want = step if length is None else min(step, length - sent)
            data = await asyncio.wait_for(src.read(want), self.upstream_timeout)
            if not data:
                if length is not None:
                    self.stats.upstream_errors += 1
                    raise ConnectionError("upstream body ended early")
                return
            if rate is not None:
                # Slice k leaves at started + (bytes before it) / rate: no idle wait after the last.
                ahead = started + sent / rate - time.monotonic()
                if ahead > 0:
                    await asyncio.sleep(ahead)
            if self.aggregate_rate and count:
                # Slices of all GETs take turns on one shared link of aggregate_rate.
                now = time.monotonic()
                slot = max(now, self._aggregate_free_at)
                self._aggregate_free_at = slot + len(data) / self.aggregate_rate
                if slot > now:
                    await asyncio.sleep(slot - now)
            sent += len(data)
            if count:  # counted before the write, so a client that has the bytes sees them counted
                self.stats.bytes_served += len(data)
            dst.write(data)
            await dst.drain()


# -- command line --------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="parcomm bcast proxy", description="Pace and fault S3 GETs between parcomm bcast and an S3 server."
    )
    p.add_argument("--upstream", required=True, help="the S3 server, http://HOST:PORT")
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT to listen on (default: a free loopback port)")
    p.add_argument("--profile", default=None, help="per-request rates, 'P:RATE,...' (e.g. 0.6:5MB,0.4:10MB) or 'paper'")
    p.add_argument("--latency", type=float, default=0.0, help="first-byte latency of each GET, seconds")
    p.add_argument("--aggregate-rate", default=None, help="cap on the total GET egress, e.g. 50MB")
    p.add_argument("--error-rate", type=float, default=0.0, help="fraction of GETs answered 503 SlowDown")
    p.add_argument("--truncate-rate", type=float, default=0.0, help="fraction of GET bodies cut short")
    p.add_argument("--truncate-mode", choices=("drop", "short"), default="drop")
    p.add_argument("--seed", type=int, default=None)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the proxy until SIGINT/SIGTERM; print its URL first and its counters last."""
    args = build_parser().parse_args(argv)
    host, _, port = args.listen.rpartition(":")
    proxy = PacingProxy(
        args.upstream,
        profile=parse_profile(args.profile) if args.profile else None,
        first_byte_latency=args.latency,
        error_rate=args.error_rate,
        aggregate_rate=parse_rate(args.aggregate_rate) if args.aggregate_rate else None,
        truncate_rate=args.truncate_rate,
        truncate_mode=args.truncate_mode,
        seed=args.seed,
        host=host or "127.0.0.1",
        port=int(port or 0),
    )

    async def run() -> None:
        await proxy.start()
        print(f"proxy {proxy.endpoint_url} -> {args.upstream}", flush=True)
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, done.set)
        await done.wait()
        await proxy.stop()

    asyncio.run(run())
    stats = asdict(proxy.stats)
    stats.pop("rates")
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
