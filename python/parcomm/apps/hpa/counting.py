"""Pass k's counting in HPA (seed 000 §3.2, step 2): one scan of the local
transactions forms every candidate k-subset and routes it to the candidate's
owner, in blocks; owners count what arrives between chunks of their own scan
(the paper runs a second process per node for that).

:func:`count_pass` is that scan, written once. What a block carries and how the
counts reach their owner is a strategy (:class:`Tally`):

* :class:`ItemsetBlocks` -- the paper's: blocks carry the itemsets (or their
  positions in C_k), owners look each one up. Every backend.
* :class:`CountOnlyBlocks` -- simulator only: blocks of the same simulated size
  leave at the same simulated times but carry only their row count; each
  sender's tallies for an owner's candidates ride on the pair's last block.
  The same counts reach the owners at a fraction of the Python cost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .apriori import MAX_ROWS, TRIM_LIMIT, Encoder, candidate_subsets, n_subsets, use_table
from .cost import CostModel

TAG_BLOCK = 4802


@dataclass(frozen=True)
class PassInputs:
    """What every strategy of pass k needs; the same on every rank but the local parts."""

    k: int
    cand: np.ndarray  # C_k, one itemset per row, sorted
    cown: np.ndarray  # owner rank of each candidate
    mine_idx: np.ndarray  # indices of the candidates this rank owns
    enc: Encoder
    ckeys: np.ndarray  # the candidates' keys under ``enc``, sorted
    foffs: np.ndarray  # this rank's transactions, filtered to C_k's items (offsets, items)
    fitems: np.ndarray
    per_block: int  # itemsets per block
    weight: int  # each local transaction stands for this many
    cost: CostModel | None  # None: real backends spend real CPU
    scan_s: float  # the scan's per-transaction and per-item CPU, charged when it ends


@dataclass
class PassCount:
    """What pass k's counting leaves on this rank."""

    counts: np.ndarray  # global count of each owned candidate (weight included)
    hit_idx: list[np.ndarray] | None  # this rank's hits, for trimming (None: too many to keep)
    hit_elems: list[np.ndarray] | None
    blocks_sent: int
    bytes_sent: int
    subsets: int
    scan_end_s: float


class Tally(Protocol):
    """How one rank's subsets reach their owners' counts."""

    sent: list[int]  # blocks and bytes sent so far

    async def chunk(self, idx: np.ndarray) -> None:
        """Account for one chunk of the scan: candidate indices of the subsets found."""

    async def finish(self) -> tuple[np.ndarray, float]:
        """After the scan: flush, receive the rest; the owned counts and when the scan ended."""


class _Hits:
    """This rank's hits, kept for trimming its transactions, up to TRIM_LIMIT."""

    def __init__(self) -> None:
        self.idx: list[np.ndarray] | None = []
        self.elems: list[np.ndarray] | None = []
        self.n = 0

    def add(self, idx: np.ndarray, elems: np.ndarray) -> None:
        if self.idx is None or self.elems is None:
            return
        self.n += len(idx)
        if self.n > TRIM_LIMIT:
            self.idx = self.elems = None
        else:
            self.idx.append(idx)
            self.elems.append(elems)


class _Inbox:
    """The receives of one pass's blocks: one outstanding until every other rank's last
    block is in (``is_last`` tells a last block)."""

    def __init__(self, comm: Any, is_last: Callable[[Any], bool]) -> None:
        self.comm, self.is_last = comm, is_last
        self.finished = 0
        self.req = comm.irecv(tag=TAG_BLOCK) if comm.size > 1 else None

    def _advance(self, msg: Any) -> None:
        self.finished += bool(self.is_last(msg))
        self.req = self.comm.irecv(tag=TAG_BLOCK) if self.finished < self.comm.size - 1 else None

    def arrived(self) -> Iterator[Any]:
        """The blocks already here, without waiting (the next receive is posted first)."""
        while self.req is not None:
            done, msg = self.req.test()
            if not done:
                return
            self._advance(msg)
            yield msg

    async def rest(self) -> AsyncIterator[Any]:
        """Every block still to come, waiting for each (the next receive is posted first)."""
        while self.req is not None:
            msg = await self.comm.wait(self.req)
            self._advance(msg)
            yield msg


async def count_pass(comm: Any, inp: PassInputs, tally: Tally) -> PassCount:
    """The scan: every candidate subset of the local transactions, chunk by chunk."""
    hits = _Hits()
    nsub = 0
    for idx, elems in candidate_subsets(inp.foffs, inp.fitems, inp.enc, inp.ckeys, with_elems="lazy"):
        nsub += len(idx) * inp.weight
        hits.add(idx, elems)
        await tally.chunk(idx)
    counts, scan_end = await tally.finish()
    blocks, nbytes = tally.sent
    return PassCount(counts * inp.weight, hits.idx, hits.elems, blocks, nbytes, nsub, scan_end)


class ItemsetBlocks:
    """Blocks carry the itemsets themselves (``wire="itemsets"``: k item ids of
    ``dtype``) or their positions in C_k (``wire="index"``: int32); the owner
    finds each one's counter."""

    def __init__(self, comm: Any, inp: PassInputs, dtype: type, wire: str) -> None:
        self.comm, self.inp, self.dtype, self.wire = comm, inp, dtype, wire
        p = comm.size
        self.counts = np.zeros(len(inp.mine_idx), dtype=np.int64)
        self.my_keys = inp.ckeys[inp.mine_idx]
        self.pending: list[list[np.ndarray]] = [[] for _ in range(p)]
        self.npend = [0] * p
        self.sends: list = []
        self.sent = [0, 0]  # blocks, bytes
        # owner side: a received itemset -> index among the owned candidates (a direct
        # table while the key space is small, else a binary search); positions are
        # gathered and counted with one bincount per ~1M
        self.table = None
        if wire == "itemsets" and use_table(inp.enc, len(self.my_keys), n_subsets(inp.foffs, inp.k)):
            self.table = np.full(inp.enc.m**inp.k, -1, dtype=np.int32)
            self.table[self.my_keys] = np.arange(len(self.my_keys), dtype=np.int32)
        self.got: list[np.ndarray] = []
        self.ngot = 0
        # own subsets: candidate index -> index among the owned candidates (a dense map)
        self.local_of = np.full(len(inp.cand), -1, dtype=np.int32)
        self.local_of[inp.mine_idx] = np.arange(len(inp.mine_idx), dtype=np.int32)
        self.inbox = _Inbox(comm, lambda msg: bool(msg[1]))

    def _tally(self, pos: np.ndarray) -> None:
        self.got.append(pos)
        self.ngot += len(pos)
        if self.ngot > MAX_ROWS:
            self.counts[:] += np.bincount(np.concatenate(self.got), minlength=len(self.inp.mine_idx))
            self.got, self.ngot = [], 0

    def _send_block(self, d: int, blk: np.ndarray, fin: bool) -> None:
        nb = blk.nbytes * self.inp.weight
        self.sends.append(self.comm.isend((blk, fin), dest=d, tag=TAG_BLOCK, nbytes=nb))
        self.sent[0] += 1
        self.sent[1] += nb

    def _empty(self) -> np.ndarray:
        return np.empty((0, self.inp.k), dtype=self.dtype) if self.wire == "itemsets" else np.empty(0, dtype=np.int32)

    def _emit_last(self, d: int) -> None:
        arr = np.concatenate(self.pending[d]) if self.pending[d] else self._empty()
        self.pending[d], self.npend[d] = [], 0
        per_block = self.inp.per_block
        for s in range(0, max(len(arr), 1), per_block):
            blk = arr[s : s + per_block]
            fin = s + per_block >= len(arr)
            if not len(blk) and not fin:
                continue
            self._send_block(d, blk, fin)

    async def _absorb(self, msg: tuple) -> None:
        blk, _ = msg
        if len(blk):
            if self.wire == "index":
                self._tally(self.local_of[blk])
            else:
                bk = self.inp.enc.keys(self.inp.enc.dense(blk.astype(np.int64)))
                self._tally(self.table[bk] if self.table is not None else np.searchsorted(self.my_keys, bk))
            if self.inp.cost:
                await self.comm.compute(self.inp.cost.per_probe_s * len(blk) * self.inp.weight)

    async def chunk(self, idx: np.ndarray) -> None:
        inp, comm = self.inp, self.comm
        p, me = comm.size, comm.rank
        if inp.cost:  # each candidate subset found is hashed and routed
            await comm.compute(inp.cost.per_subset_s * len(idx) * inp.weight)
        dest = inp.cown[idx] if p > 1 else None
        for d in range(p):
            sel = idx[dest == d] if p > 1 else idx
            if not len(sel):
                continue
            if d == me:
                self._tally(self.local_of[sel])
                continue
            self.pending[d].append(
                inp.cand[sel].astype(self.dtype) if self.wire == "itemsets" else sel.astype(np.int32)
            )
            self.npend[d] += len(sel)
            if self.npend[d] >= inp.per_block:
                full = (self.npend[d] // inp.per_block) * inp.per_block
                arr = np.concatenate(self.pending[d])
                self.pending[d], self.npend[d] = [arr[full:]], self.npend[d] - full
                for s in range(0, full, inp.per_block):
                    self._send_block(d, arr[s : s + inp.per_block], False)
        for msg in self.inbox.arrived():
            await self._absorb(msg)

    async def finish(self) -> tuple[np.ndarray, float]:
        comm = self.comm
        if self.inp.cost:
            await comm.compute(self.inp.scan_s)
        scan_end = comm.wtime()
        for d in range(comm.size):
            if d != comm.rank:
                self._emit_last(d)
        async for msg in self.inbox.rest():  # then the rest of what the others send
            await self._absorb(msg)
        await comm.waitall(self.sends)
        if self.got:
            self.counts[:] += np.bincount(np.concatenate(self.got), minlength=len(self.inp.mine_idx))
        return self.counts, scan_end


class CountOnlyBlocks:
    """Simulator only: blocks of ``k * itemsize * weight`` bytes a row carry only
    their row count; each rank charges its scan's CPU in steps of at most
    ``pace_s`` simulated seconds and sends a block when its last subset is formed,
    so blocks leave spread over the pass as from a real scan. The pair's last block
    carries the sender's tallies for the owner's candidates."""

    def __init__(self, comm: Any, inp: PassInputs, itemsize: int, pace_s: float) -> None:
        self.comm, self.inp = comm, inp
        p = comm.size
        self.row_bytes = inp.k * itemsize * inp.weight
        self.tallies = np.zeros(len(inp.cand), dtype=np.int64)  # this rank's subsets per candidate
        self.fill = np.zeros(p, dtype=np.int64)  # rows pending per destination
        self.sends: list = []
        self.sent = [0, 0]  # blocks, bytes
        self.probe_rows = 0  # rows received and not yet charged
        self.received: list[np.ndarray] = []
        self.per_sub = inp.cost.per_subset_s * inp.weight if inp.cost else 0.0
        self.per_probe = inp.cost.per_probe_s * inp.weight if inp.cost else 0.0
        self.pace_s = pace_s
        owners = inp.cown
        by_owner = np.argsort(owners.astype(np.int16), kind="stable")  # radix sort (p <= 32767)
        bounds = np.searchsorted(owners[by_owner], np.arange(p + 1))
        self.mine_of = [by_owner[bounds[d] : bounds[d + 1]] for d in range(p)]  # candidates by owner
        self.all_idx: list[np.ndarray] = []
        self.inbox = _Inbox(comm, lambda msg: not isinstance(msg, int))

    def _take(self, msg: Any) -> None:
        if isinstance(msg, int):  # a full block: its row count
            self.probe_rows += msg
            return
        nrows, tal = msg  # the pair's last block and the sender's tallies
        self.probe_rows += nrows
        self.received.append(tal)

    def _send(self, d: int, nrows: int, fin: bool) -> None:
        nb = nrows * self.row_bytes
        msg = (nrows, self.tallies[self.mine_of[d]]) if fin else nrows
        self.sends.append(self.comm.isend(msg, dest=d, tag=TAG_BLOCK, nbytes=nb))
        self.sent[0] += 1
        self.sent[1] += nb

    async def chunk(self, idx: np.ndarray) -> None:
        comm, inp = self.comm, self.inp
        p, me, per_block = comm.size, comm.rank, inp.per_block
        self.all_idx.append(idx)
        dest = inp.cown[idx]
        # where in this chunk each remote destination's block fills up
        order = np.argsort(dest.astype(np.int16), kind="stable")
        ds = dest[order]
        starts = np.searchsorted(ds, np.arange(p))
        rank_in = np.arange(len(ds)) - starts[ds]
        full = ((self.fill[ds] + rank_in + 1) % per_block == 0) & (ds != me)
        at = np.sort(order[full])  # positions (subset number in chunk) where a block completes
        self.fill += np.bincount(dest, minlength=p)
        self.fill %= per_block
        self.fill[me] = 0
        # charge the chunk's CPU in steps of at most pace_s, sending blocks as they fill
        done_pos = 0
        step = max(1, int(self.pace_s / self.per_sub)) if self.per_sub > 0 else max(1, len(idx))
        j = 0
        while done_pos < len(idx):
            upto = min(len(idx), done_pos + step)
            if inp.cost:
                extra = self.probe_rows * self.per_probe
                self.probe_rows = 0
                await comm.compute((upto - done_pos) * self.per_sub + extra)
            while j < len(at) and at[j] < upto:
                self._send(int(dest[at[j]]), per_block, False)
                j += 1
            done_pos = upto
            for msg in self.inbox.arrived():
                self._take(msg)

    async def finish(self) -> tuple[np.ndarray, float]:
        comm, inp = self.comm, self.inp
        if inp.cost:
            await comm.compute(inp.scan_s + self.probe_rows * self.per_probe)
            self.probe_rows = 0
        if self.all_idx:
            self.tallies += np.bincount(np.concatenate(self.all_idx), minlength=len(inp.cand))
        for d in range(comm.size):
            if d != comm.rank:
                self._send(d, int(self.fill[d]), True)
        scan_end = comm.wtime()
        async for msg in self.inbox.rest():
            self._take(msg)
        if inp.cost and self.probe_rows:
            await comm.compute(self.probe_rows * self.per_probe)
        await comm.waitall(self.sends)
        counts = self.tallies[inp.mine_idx].copy()
        for tal in self.received:
            counts += tal
        return counts, scan_end
