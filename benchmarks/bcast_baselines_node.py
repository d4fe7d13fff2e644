"""The baselines' node programs of ``benchmarks/bcast_baselines.py`` (issue 9, point 4).

Benchmark harness, not product: the library's emulation
(:class:`parcomm.apps.bcast.emu.EmuBcast`) starts this file in every node
namespace (``python benchmarks/bcast_baselines_node.py KIND ...``), on the
same platform, proxy profile and timing rule as ``parcomm bcast`` itself
(start: last registration in the rendezvous directory; end: the output's
last write). ``bcast_baselines.py`` holds the harness side (the argv of
each node, mpiexec's launcher, collecting the results):

* ``ranged`` — the flat tree with parallel range requests, what boto3's
  transfer manager and s5cmd do: every node downloads the whole object with
  ``k`` concurrent ranged GETs of ``part`` bytes (boto3's TransferConfig
  defaults: 8 MiB parts, 10 threads), through :class:`parcomm.apps.bcast.s3.S3Client`.
* ``mpi`` — MPI_Bcast with MPICH: rank 0 downloads the object as ``ranged``
  does, then ``MPI_Bcast`` sends it to all ranks (mpiexec with a launcher
  that starts each rank's proxy in its node's namespace, see
  ``run_mpi`` in ``bcast_baselines.py``).
* ``torrent`` — a libtorrent swarm: rank 0 downloads the object as
  ``ranged`` does and seeds it; every node runs a libtorrent session in its
  namespace, peers given explicitly (no tracker, no DHT).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from parcomm.apps.bcast.emu import URL
from parcomm.apps.bcast.rendezvous import via_directory
from parcomm.apps.bcast.s3 import S3Client, S3Config
from parcomm.auth import resolve_key

#: boto3 s3transfer TransferConfig defaults: multipart_chunksize 8 MiB, max_concurrency 10.
BOTO3_PART = 8 << 20
BOTO3_CONCURRENCY = 10
TORRENT_PORT = 6881


def ranged_download(client: S3Client, url: str, size: int, out_fd: int, k: int, part: int) -> int:
    """Fetch ``[0, size)`` with ``k`` concurrent ranged GETs of ``part`` bytes, pwrite into ``out_fd``."""
    spans = [(s, min(size, s + part)) for s in range(0, size, part)]

    def one(span: tuple[int, int]) -> int:
        def keep(offset: int, data: bytes) -> None:
            os.pwrite(out_fd, data, offset)

        return client.get_range(url, span[0], span[1], keep, chunk_size=1 << 20)

    with ThreadPoolExecutor(max_workers=max(1, k)) as pool:
        return sum(pool.map(one, spans))


def _client(k: int, seed: int) -> S3Client:
    return S3Client(S3Config.from_env(), max_pool_connections=max(k, 2), seed=seed)


def _register(rdv: str, rank: int, nodes: int, addr: str) -> None:
    via_directory(rdv, rank, nodes, (addr, TORRENT_PORT), key=resolve_key(), job="baseline", timeout=300)


# ---------------------------------------------------------------- (a) flat tree, ranged GETs


def node_ranged(args) -> dict:
    client = _client(args.k, args.rank)
    size = client.head(URL).size
    _register(args.rdv, args.rank, args.nodes, args.bind)
    t = time.monotonic()
    fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        got = ranged_download(client, URL, size, fd, args.k, args.part)
    finally:
        os.close(fd)
    return {
        "rank": args.rank,
        "run_s": time.monotonic() - t,
        "bytes_from_storage": got,
        "bytes_from_peers": 0,
        "storage_requests": client.stats.requests,
    }


# ---------------------------------------------------------------- (b) MPI_Bcast after one download


def node_mpi(args) -> dict:
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, nodes = comm.Get_rank(), comm.Get_size()
    client = _client(args.k, rank) if rank == 0 else None
    size = client.head(URL).size if rank == 0 else 0
    size = comm.bcast(size, root=0)
    comm.Barrier()
    _register(args.rdv, rank, nodes, "mpi")
    comm.Barrier()
    t = time.monotonic()
    out = args.out.replace("{rank}", str(rank))
    buf = np.empty(size, dtype=np.uint8)
    got = 0
    if rank == 0:
        fd = os.open(out, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        got = ranged_download(client, URL, size, fd, args.k, args.part)
        t_download = time.monotonic() - t
        buf[:] = np.frombuffer(os.pread(fd, size, 0), dtype=np.uint8) if size else buf
        os.close(fd)
    else:
        t_download = None
    comm.Bcast(buf, root=0)  # MPICH picks its algorithm (long messages: scatter + allgather)
    if rank != 0:
        with open(out, "wb") as f:
            f.write(buf.tobytes())
    return {
        "rank": rank,
        "run_s": time.monotonic() - t,
        "bytes_from_storage": got,
        "bytes_from_peers": 0 if rank == 0 else size,
        "download_s": t_download,
        "mpi_library": MPI.Get_library_version().splitlines()[0],
    }


# ---------------------------------------------------------------- (c) libtorrent swarm


def make_torrent(path: str, piece_size: int) -> bytes:
    """A v1 .torrent for the single file ``path`` (no tracker)."""
    import libtorrent as lt

    fs = lt.file_storage()
    lt.add_files(fs, path)
    t = lt.create_torrent(fs, piece_size, flags=lt.create_torrent.v1_only)
    lt.set_piece_hashes(t, os.path.dirname(path))
    return lt.bencode(t.generate())


def make_torrent_bytes(data: bytes, name: str, piece_size: int) -> bytes:
    """A v1 .torrent of one file ``name`` holding ``data`` (no tracker): the swarm's
    hash list, made ahead of time as ``parcomm bcast prepare`` makes parcomm's."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return make_torrent(path, piece_size)


def _share(rank: int, nodes: int, pieces: int) -> range:
    """Rank's contiguous 1/N of the pieces (seed 004 phase 1)."""
    return range(rank * pieces // nodes, (rank + 1) * pieces // nodes)


def node_torrent(args) -> dict:
    """A libtorrent swarm over the node namespaces.

    ``--seeding inject`` (default, issue 9's wording): every node fetches its
    1/N of the pieces from S3 with ``k`` concurrent ranged GETs and injects
    each into its libtorrent session (``add_piece``) as it arrives, while the
    swarm exchanges the rest. ``--seeding one``: rank 0 downloads the whole
    object (``k`` ranged GETs), then seeds it. The .torrent is made ahead of
    time by the harness (like parcomm's hash list)."""
    import threading

    import libtorrent as lt

    rdv = Path(args.rdv)
    info = lt.torrent_info(lt.bdecode(Path(args.torrent).read_bytes()))
    out = Path(args.out)
    info.rename_file(0, out.name)
    pieces, plen = info.num_pieces(), info.piece_length()
    size = info.total_size()
    inject = args.seeding == "inject"
    mine = _share(args.rank, args.nodes, pieces) if inject else (range(pieces) if args.rank == 0 else range(0))
    client = _client(args.k, args.rank) if len(mine) else None
    if client is not None:
        client.head(URL)  # connect and check before the clock starts, as parcomm's nodes do
    settings = {
        "listen_interfaces": f"{args.bind}:{TORRENT_PORT}",
        "enable_dht": False,
        "enable_lsd": False,
        "enable_upnp": False,
        "enable_natpmp": False,
        "alert_mask": 0,
        "allow_multiple_connections_per_ip": True,
        "unchoke_slots_limit": -1,  # unchoke every interested peer: a cooperative swarm
        "connections_limit": 4 * args.nodes + 8,
        "close_redundant_connections": False,
        "user_agent": "parcomm-baseline",
    }
    ses = lt.session(settings)
    params = lt.add_torrent_params()
    params.ti = info
    params.save_path = str(out.parent)
    handle = ses.add_torrent(params)
    if len(mine):  # never ask peers for what we are fetching from S3
        prio = [1] * pieces
        for i in mine:
            prio[i] = 0
        handle.prioritize_pieces(prio)
    _register(args.rdv, args.rank, args.nodes, args.bind)
    t = time.monotonic()
    peers = json.loads(args.peers)
    for r, addr in enumerate(peers):
        if r != args.rank:
            handle.connect_peer((addr, TORRENT_PORT))
    got = [0]
    failure: list[BaseException] = []

    target = handle  # the fetch thread's own reference (``handle`` is deleted at the end)

    def fetch() -> None:
        lock = threading.Lock()
        spans = []
        step = max(1, args.part // plen)
        for first in range(mine.start, mine.stop, step):
            last = min(mine.stop, first + step)
            spans.append((first * plen, min(size, last * plen)))

        def one(span):
            def keep(offset: int, data: bytes) -> None:
                target.add_piece(offset // plen, bytes(data), 0)
                with lock:
                    got[0] += len(data)

            client.get_range(URL, span[0], span[1], keep, chunk_size=plen)

        try:
            with ThreadPoolExecutor(max_workers=max(1, args.k)) as pool:
                list(pool.map(one, spans))
        except BaseException as exc:  # reported below
            failure.append(exc)

    fetcher = threading.Thread(target=fetch, daemon=True) if len(mine) else None
    if fetcher is not None:
        fetcher.start()
    deadline = time.monotonic() + args.timeout
    done_at = None
    payload = 0
    while time.monotonic() < deadline and not failure:
        st = handle.status()
        if done_at is None and st.num_pieces == pieces:
            done_at = time.monotonic() - t
            payload = st.total_payload_download
            handle.flush_cache()
            (rdv / f"done-{args.rank}").write_text("1")
        if done_at is not None and all((rdv / f"done-{r}").exists() for r in range(args.nodes)):
            break  # everyone has it: stop serving
        time.sleep(0.02)
    if fetcher is not None:
        fetcher.join(timeout=5)
    ses.pause()
    del handle
    del ses  # closes the files: the output is complete on disk now
    if failure:
        raise SystemExit(f"rank {args.rank}: S3 fetch failed: {failure[0]}")
    if done_at is None:
        raise SystemExit(f"rank {args.rank}: torrent incomplete after {args.timeout:.0f} s")
    return {
        "rank": args.rank,
        "run_s": done_at,
        "bytes_from_storage": got[0],
        "bytes_from_peers": payload,
        "libtorrent": lt.__version__,
        "seeding": args.seeding,
    }


def node_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/bcast_baselines_node.py")
    p.add_argument("kind", choices=("ranged", "mpi", "torrent"))
    p.add_argument("--out", required=True)
    p.add_argument("--rdv", required=True)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--k", type=int, default=BOTO3_CONCURRENCY)
    p.add_argument("--part", type=int, default=BOTO3_PART)
    p.add_argument("--piece", type=int, default=1 << 20)
    p.add_argument("--peers", default="[]")
    p.add_argument("--torrent", default=None, help="the .torrent (torrent)")
    p.add_argument("--seeding", choices=("inject", "one"), default="inject")
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args(list(argv))
    report = {"ranged": node_ranged, "mpi": node_mpi, "torrent": node_torrent}[args.kind](args)
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(node_main(sys.argv[1:]))
