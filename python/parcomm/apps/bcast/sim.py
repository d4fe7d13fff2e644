"""Flow-level discrete-event driver: N :class:`~.node.BcastNode` state
machines over the storage and network model of :mod:`.storage_model`.

The machines are the ones the real tool runs; this driver replaces S3 and
sockets by flows whose rates are shared as follows, recomputed whenever a
flow starts or ends:

* a node's **download link** is shared by progressive filling (max-min)
  among its incoming flows, each also limited by its own cap;
* a node's **upload link** is split equally among its outgoing flows (that
  share is one of the caps above); so the allocation is max-min at
  receivers and equal-split at senders, a documented simplification of
  global max-min fairness that keeps each update local;
* a **storage GET** is capped by its drawn per-request rate (after the
  request latency) and, if the profile sets one, an equal share of the
  aggregate storage limit;
* a **peer flow** carries the pieces queued from one node to another, one
  after the other (so a ``Cancel`` can still remove queued ones), capped by
  the pair's time-varying factor, sampled when each piece starts.

Control messages are not flows: they arrive ``message_latency_s`` later, in
order per pair. Pieces are verified instantly: pieces from a node listed in
``faults["corrupt"]`` fail, all others pass. ``faults["dead"] = {rank: t}``
kills a node at ``t``: its flows stop and ``PeerLost`` reaches
``faults["detect_s"]`` (default 1 s) later only the nodes the real driver
would see it on -- those it had opened a connection to -- and, at the same
delay, any node that sends it something afterwards (the others learn it
from the nodes' notices, :mod:`.notices`).

Connections are counted as the real driver opens them: one per ordered
pair (sender, receiver) the first time the sender sends anything to a live
receiver (``SimResult.connections``, per node and in total). A run stops when
every honest live node finished, at ``max_time``, or when no byte moved for
20x the longest protocol timeout (a stuck protocol: ``complete`` is False).

:func:`simulate` returns a :class:`SimResult`. Same arguments, same result.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from .layout import Layout
from .messages import (
    CancelFetch,
    CancelUpload,
    Drop,
    Failed,
    FetchStorage,
    PeerLost,
    PeerMessage,
    PeerPiece,
    Piece,
    S3FetchDone,
    S3Piece,
    Send,
    Start,
    Tick,
)
from .node import BcastConfig, BcastNode
from .storage_model import MB, Profile, load_profile

STORAGE = -1  # source id of storage flows

# heap entry kinds
_DELIVER, _BOUNDARY, _TICK, _GET_START, _KILL = range(5)


class _Flow:
    __slots__ = ("src", "dst", "chunks", "left", "rate", "cap", "t", "version", "fetch_id", "slot", "active")

    def __init__(self, src: int, dst: int, cap: float, fetch_id: int = -1, slot: int = -1) -> None:
        self.src, self.dst, self.cap, self.fetch_id, self.slot = src, dst, cap, fetch_id, slot
        self.chunks: deque[tuple[int, int]] = deque()  # (piece, bytes); head is in flight
        self.left = 0.0  # bytes left of the head chunk
        self.rate = 0.0
        self.t = 0.0
        self.version = 0
        self.active = False


#: BcastConfig fields whose --json name carries the unit (``strictjson`` vocabulary).
_JSON_UNITS = {"piece_size": "_bytes", "choke_interval": "_s", "stall_timeout": "_s", "orphan_timeout": "_s"}


def _config_json(config: dict) -> dict:
    """A BcastConfig as a dict (``asdict``), with units in the names, for --json."""
    return {k + _JSON_UNITS.get(k, ""): v for k, v in config.items()}


@dataclass
class SimResult:
    procs: int
    size_bytes: int
    algo: str
    profile: str
    seed: int
    config: dict
    complete: bool
    completion_s: float  # last honest live node done
    phase1_end_s: float  # last storage phase over
    finished_s: list  # per node (None: dead, corrupt-banned or unfinished)
    storage_done_s: list
    exchange_started_s: list
    bytes_from_storage: list
    bytes_from_peers: list
    origin_egress_bytes: int  # bytes that left storage, partial GETs included
    failures: dict = field(default_factory=dict)  # rank -> reason
    drops: dict = field(default_factory=dict)  # reason ("failed verification", "stalled", ...) -> count
    orphan_works: int = 0  # works nodes refetched because no neighbour held their pieces
    connections: list = field(default_factory=list)  # per node: peer connections it opened
    bad_pieces_kept: int = 0  # pieces failing verification that a node nevertheless kept (must be 0)
    events: int = 0
    wall_s: float = 0.0

    def _done(self) -> list[int]:
        return [i for i, t in enumerate(self.finished_s) if t is not None]

    @property
    def mean_node_mb_s(self) -> float:
        """Mean over nodes of size / completion time (MB/s)."""
        done = [self.size_bytes / self.finished_s[i] / MB for i in self._done() if self.finished_s[i] > 0]
        return sum(done) / len(done) if done else 0.0

    @property
    def total_mb_s(self) -> float:
        """Sum over nodes of size / completion time (Fig. 11's total throughput)."""
        return self.mean_node_mb_s * len(self._done())

    @property
    def phase_means(self) -> dict[str, float]:
        """Fig. 12/13 material: mean phase durations and per-node throughputs.
        Phase 1 of a node: start to its storage phase's end; phase 2: exchange
        opened to finished (0 for flat)."""
        idx = [i for i in self._done() if self.storage_done_s[i] is not None]
        if not idx:
            return {}
        p1 = [self.storage_done_s[i] for i in idx]
        p2 = [
            self.finished_s[i]
            - (self.exchange_started_s[i] if self.exchange_started_s[i] is not None else self.finished_s[i])
            for i in idx
        ]
        thr1 = [self.bytes_from_storage[i] / t / MB for i, t in zip(idx, p1) if t > 0]
        thr2 = [self.bytes_from_peers[i] / t / MB for i, t in zip(idx, p2) if t > 0]
        mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
        return {"phase1_s": mean(p1), "phase2_s": mean(p2), "phase1_mb_s": mean(thr1), "phase2_mb_s": mean(thr2)}

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["config"] = _config_json(self.config)
        d.update(
            mean_node_mb_s=self.mean_node_mb_s,
            total_mb_s=self.total_mb_s,
            phase_means=self.phase_means,
            egress_ratio=self.origin_egress_bytes / self.size_bytes if self.size_bytes else 0.0,
            connections_total=sum(self.connections),
        )
        return d


class _Driver:
    def __init__(
        self, nodes: list[BcastNode], layout: Layout, profile: Profile, seed: int, faults: dict | None
    ) -> None:
        self.nodes, self.layout, self.profile, self.seed = nodes, layout, profile, seed
        n = len(nodes)
        faults = faults or {}
        self.corrupt = set(faults.get("corrupt", ()))
        self.detect_s = float(faults.get("detect_s", 1.0))
        self.rng = random.Random(f"storage/{seed}")
        self.heap: list = []
        self.seq = 0
        self.now = 0.0
        self.alive = [True] * n
        self.in_flows: list[set[_Flow]] = [set() for _ in range(n)]
        self.out_flows: list[set[_Flow]] = [set() for _ in range(n)]
        self.storage_flows: set[_Flow] = set()
        self.fetches: list[dict[int, _Flow]] = [{} for _ in range(n)]  # per node: fetch id -> flow
        self.uploads: dict[tuple[int, int], _Flow] = {}  # (src, dst) -> flow carrying the queue
        self.conn_rate: dict[tuple[int, int], tuple[float, float]] = {}  # (node, slot) -> (rate, drawn at)
        self.tick_at: list[float | None] = [None] * n
        self.egress = 0.0
        self.failures: dict[int, str] = {}
        self.bad_kept = 0
        self.drops: dict[str, int] = {}
        self.last_progress = 0.0  # last time a byte chunk arrived anywhere
        cfg = nodes[0].cfg
        self.idle_limit = 20 * max(cfg.stall_timeout, cfg.orphan_timeout, cfg.choke_interval)
        self.events = 0
        self.waiting = {i for i in range(n) if i not in self.corrupt}  # honest nodes not finished
        self.links: set[tuple[int, int]] = set()  # (sender, receiver): connections opened
        self.told: set[tuple[int, int]] = set()  # (node, dead rank): PeerLost on its way
        self.outgoing = [0] * n  # connections each node opened
        self.delivery: dict[float, list] = {}  # time -> messages of the one _DELIVER entry then
        for rank, at in dict(faults.get("dead", {})).items():
            self._push(float(at), _KILL, int(rank))

    # ------------------------------------------------------------ scheduling

    def _push(self, at: float, kind: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, self.seq, kind, payload))

    def run(self, max_time: float) -> None:
        for rank in range(len(self.nodes)):
            self._handle(rank, Start())
        heap = self.heap
        while heap:
            at, _, kind, payload = heapq.heappop(heap)
            if at > max_time:
                break
            self.now = at
            self.events += 1
            if kind == _DELIVER:
                if self.delivery.get(at) is payload:
                    del self.delivery[at]
                for rank, event in payload:
                    if self.alive[rank]:
                        self._handle(rank, event)
            elif kind == _BOUNDARY:
                flow, version = payload
                if flow.active and flow.version == version:
                    self._chunk_done(flow)
            elif kind == _TICK:
                if self.alive[payload] and self.tick_at[payload] == at:
                    self.tick_at[payload] = None
                    self._handle(payload, Tick())
            elif kind == _GET_START:
                self._start_flow(payload)
            elif kind == _KILL:
                self._kill(payload)
            if not self.waiting or at - self.last_progress > self.idle_limit:
                break

    # ------------------------------------------------------------ node actions

    def _handle(self, rank: int, event) -> None:
        node = self.nodes[rank]
        if type(event) is PeerPiece and not event.ok:
            before = bool(node.have[event.piece])
            actions = node.handle(self.now, event)
            self.bad_kept += int(node.have[event.piece] and not before)
        else:
            actions = node.handle(self.now, event)
        if node.finished_at is not None:
            self.waiting.discard(rank)
        if not actions and self.tick_at[rank] is not None and node.next_deadline() == self.tick_at[rank]:
            return  # nothing to do (e.g. one of the N - 1 Done messages)
        messages = []
        for action in actions:
            kind = type(action)
            if kind is Send:
                if not self._connected(rank, action.peer):
                    continue
                if type(action.msg) is Piece:
                    self._queue_piece(rank, action.peer, action.msg.piece)
                else:
                    messages.append((action.peer, PeerMessage(rank, action.msg)))
            elif kind is FetchStorage:
                self._fetch(rank, action)
            elif kind is CancelFetch:
                flow = self.fetches[rank].pop(action.fetch_id, None)
                if flow is not None:
                    self._stop(flow)
            elif kind is CancelUpload:
                flow = self.uploads.get((rank, action.peer))
                if flow is not None and len(flow.chunks) > 1:
                    head = flow.chunks.popleft()
                    kept = [c for c in flow.chunks if action.piece is not None and c[0] != action.piece]
                    flow.chunks = deque([head, *kept])
            elif kind is Drop:
                why = "failed verification" if "failed verification" in action.reason else action.reason.split(":")[0]
                self.drops[why] = self.drops.get(why, 0) + 1
                for pair in ((rank, action.peer), (action.peer, rank)):
                    flow = self.uploads.pop(pair, None)
                    if flow is not None:
                        self._stop(flow)
            elif kind is Failed:
                self.failures[rank] = action.reason
                self.waiting.discard(rank)
        if messages:
            self._deliver(self.now + self.profile.message_latency_s, messages)
        deadline = node.next_deadline()
        if deadline is not None and deadline != self.tick_at[rank]:
            self.tick_at[rank] = max(deadline, self.now)
            self._push(self.tick_at[rank], _TICK, rank)

    def _deliver(self, at: float, messages: list) -> None:
        """Messages due at ``at``: one heap entry per instant (a notice's tree
        moves in lockstep, so N nodes' forwards share an instant)."""
        batch = self.delivery.get(at)
        if batch is not None:
            batch.extend(messages)
            return
        self.delivery[at] = messages
        self._push(at, _DELIVER, messages)

    def _connected(self, src: int, dst: int) -> bool:
        """The connection ``src`` -> ``dst`` exists or opens; a dead ``dst`` cannot
        be reached, and ``src`` sees that (``PeerLost``) after the detection delay."""
        if not self.alive[dst]:
            if (src, dst) not in self.told:
                self.told.add((src, dst))
                self._push(self.now + self.detect_s, _DELIVER, [(src, PeerLost(dst))])
            return False
        if (src, dst) not in self.links:
            self.links.add((src, dst))
            self.outgoing[src] += 1
        return True

    def _fetch(self, rank: int, action: FetchStorage) -> None:
        used = {f.slot for f in self.fetches[rank].values()}
        slot = min(s for s in range(len(used) + 1) if s not in used)
        rate, drawn = self.conn_rate.get((rank, slot), (0.0, -math.inf))
        if self.now - drawn >= self.profile.rate_hold_s:
            rate, drawn = self.profile.draw_request_rate(self.rng), self.now
            self.conn_rate[(rank, slot)] = (rate, drawn)
        flow = _Flow(STORAGE, rank, rate, action.fetch_id, slot)
        flow.chunks.extend((p, self.layout.piece_length(p)) for p in range(action.first_piece, action.last_piece + 1))
        self.fetches[rank][action.fetch_id] = flow
        self._push(self.now + self.profile.request_latency_s, _GET_START, flow)

    def _queue_piece(self, src: int, dst: int, piece: int) -> None:
        if not self.alive[dst]:
            return
        flow = self.uploads.get((src, dst))
        if flow is None:
            flow = self.uploads[(src, dst)] = _Flow(src, dst, self._pair_cap(src, dst))
        flow.chunks.append((piece, self.layout.piece_length(piece)))
        if not flow.active:
            self._start_flow(flow)

    def _pair_cap(self, src: int, dst: int) -> float:
        return self.profile.peer_rate * self.profile.peer_factor(self.seed, src, dst, self.now)

    # ------------------------------------------------------------ flows

    def _start_flow(self, flow: _Flow) -> None:
        if flow.src == STORAGE and self.fetches[flow.dst].get(flow.fetch_id) is not flow:
            return  # cancelled during the request latency
        if not self.alive[flow.dst] or not flow.chunks:
            return
        flow.active, flow.t, flow.rate = True, self.now, 0.0
        flow.left = float(flow.chunks[0][1])
        self.in_flows[flow.dst].add(flow)
        if flow.src == STORAGE:
            self.storage_flows.add(flow)
        else:
            self.out_flows[flow.src].add(flow)
        self._reshare(flow)

    def _stop(self, flow: _Flow) -> None:
        """Remove a flow before its end (cancel, drop, death)."""
        if not flow.active:
            flow.chunks.clear()
            return
        self._advance(flow)
        if flow.src == STORAGE and flow.chunks:
            self.egress += flow.chunks[0][1] - flow.left
        flow.chunks.clear()
        self._end(flow)

    def _end(self, flow: _Flow) -> None:
        flow.active = False
        flow.version += 1
        self.in_flows[flow.dst].discard(flow)
        if flow.src == STORAGE:
            self.storage_flows.discard(flow)
        else:
            self.out_flows[flow.src].discard(flow)
            if self.uploads.get((flow.src, flow.dst)) is flow:
                del self.uploads[(flow.src, flow.dst)]
        self._reshare(flow)

    def _advance(self, flow: _Flow) -> None:
        flow.left -= flow.rate * (self.now - flow.t)
        flow.t = self.now

    def _set_rate(self, flow: _Flow, rate: float) -> None:
        if rate == flow.rate:
            return
        self._advance(flow)
        flow.rate = rate
        flow.version += 1
        if rate > 0:
            self._push(self.now + max(flow.left, 0.0) / rate, _BOUNDARY, (flow, flow.version))

    def _reshare(self, flow: _Flow) -> None:
        """Recompute rates at the links a flow change touched."""
        receivers = {flow.dst}
        if flow.src != STORAGE:
            receivers.update(f.dst for f in self.out_flows[flow.src])
        elif self.profile.aggregate is not None:
            receivers.update(f.dst for f in self.storage_flows)
        for rank in sorted(receivers):
            self._fill_downlink(rank)

    def _fill_downlink(self, rank: int) -> None:
        flows = self.in_flows[rank]
        if not flows:
            return
        limits = []
        for f in flows:
            if f.src == STORAGE:
                limit = f.cap
                if self.profile.aggregate is not None:
                    limit = min(limit, self.profile.aggregate / len(self.storage_flows))
            else:
                limit = min(f.cap, self.profile.nic_up / len(self.out_flows[f.src]))
            limits.append((limit, f.src, f.fetch_id, f))
        limits.sort(key=lambda x: x[:3])
        capacity, count = self.profile.nic_down, len(limits)
        for limit, _, _, f in limits:
            rate = min(limit, capacity / count)
            capacity -= rate
            count -= 1
            self._set_rate(f, rate)

    def _chunk_done(self, flow: _Flow) -> None:
        piece, nbytes = flow.chunks.popleft()
        self.last_progress = self.now
        if flow.src == STORAGE:
            self.egress += nbytes
            done = [(flow.dst, S3Piece(flow.fetch_id, piece, True))]
            if not flow.chunks:
                done.append((flow.dst, S3FetchDone(flow.fetch_id)))
                self.fetches[flow.dst].pop(flow.fetch_id, None)
            self._push(self.now, _DELIVER, done)
        else:
            arrival = PeerPiece(flow.src, piece, ok=flow.src not in self.corrupt)
            self._push(self.now + self.profile.message_latency_s, _DELIVER, [(flow.dst, arrival)])
        if not flow.chunks:
            self._end(flow)
            return
        flow.left, flow.t = float(flow.chunks[0][1]), self.now
        if flow.src != STORAGE:
            cap = self._pair_cap(flow.src, flow.dst)
            if cap != flow.cap:
                flow.cap = cap
                self._fill_downlink(flow.dst)
        flow.version += 1
        if flow.rate > 0:
            self._push(self.now + flow.left / flow.rate, _BOUNDARY, (flow, flow.version))

    # ------------------------------------------------------------ faults

    def _kill(self, rank: int) -> None:
        if not self.alive[rank]:
            return
        self.alive[rank] = False
        self.waiting.discard(rank)
        doomed = set(self.in_flows[rank]) | set(self.out_flows[rank]) | set(self.fetches[rank].values())
        doomed |= {f for (s, d), f in self.uploads.items() if rank in (s, d)}
        for flow in sorted(doomed, key=lambda f: (f.src, f.dst, f.fetch_id)):
            self._stop(flow)
        self.fetches[rank].clear()
        # its connections close: the nodes it had connected to see that; the others learn it by notices
        seen = sorted(dst for src, dst in self.links if src == rank and (dst, rank) not in self.told)
        self.told.update((dst, rank) for dst in seen)
        self._push(self.now + self.detect_s, _DELIVER, [(r, PeerLost(rank)) for r in seen])


def simulate(
    nodes: int,
    size: int,
    algo: str = "steal",
    profile: Any = None,
    seed: int = 0,
    config: BcastConfig | None = None,
    faults: dict | None = None,
    max_time: float = 1e6,
) -> SimResult:
    """Broadcast ``size`` bytes to ``nodes`` simulated nodes with ``algo``.

    ``profile``: a :class:`~.storage_model.Profile`, a profile name, a
    TOML/JSON path or a dict (default ``chiba2010``). ``seed`` drives the
    storage draws and every node's choices (it replaces ``config.seed``).
    ``faults``: ``{"dead": {rank: time_s}, "corrupt": [rank, ...],
    "detect_s": 1.0}``. ``max_time`` bounds simulated seconds.
    """
    if nodes <= 0:
        raise ValueError(f"nodes must be > 0, got {nodes}")
    prof = load_profile(profile)
    cfg = replace(config or BcastConfig(), seed=seed)
    layout = cfg.layout(size)
    machines = [BcastNode(rank, nodes, layout, algo, cfg) for rank in range(nodes)]
    driver = _Driver(machines, layout, prof, seed, faults)
    wall = time.perf_counter()
    driver.run(max_time)
    wall = time.perf_counter() - wall
    honest = [i for i in range(nodes) if driver.alive[i] and i not in driver.corrupt]
    finished = [m.finished_at if m.finished else None for m in machines]
    done_at = [finished[i] for i in honest]
    complete = all(t is not None for t in done_at)
    storage_done = [m.storage_done_at for m in machines]
    return SimResult(
        procs=nodes,
        size_bytes=size,
        algo=algo,
        profile=prof.name,
        seed=seed,
        config=cfg.to_dict(),
        complete=complete,
        completion_s=max((t for t in done_at if t is not None), default=0.0),
        phase1_end_s=max((t for t in storage_done if t is not None), default=0.0),
        finished_s=finished,
        storage_done_s=storage_done,
        exchange_started_s=[m.exchange_started_at for m in machines],
        bytes_from_storage=[m.bytes_from_storage for m in machines],
        bytes_from_peers=[m.bytes_from_peers for m in machines],
        origin_egress_bytes=int(round(driver.egress)),
        failures=dict(driver.failures),
        drops=dict(sorted(driver.drops.items())),
        orphan_works=sum(m.orphan_fetches for m in machines),
        connections=list(driver.outgoing),
        bad_pieces_kept=driver.bad_kept,
        events=driver.events,
        wall_s=wall,
    )
