"""HPA (Hash Partitioned Apriori), seed 000 §3.2, as a rank program.

Every rank holds one contiguous partition of the transactions. Pass k:

1. every rank builds the same candidates C_k from L_{k-1}; a hash function
   of the itemset names its owner, which keeps the owned candidates' counts;
2. each rank reads its local transactions, forms the k-subsets that are
   candidates and sends each to its owner, packed in blocks of
   ``block_bytes`` (8 KB in the paper; the simulated size of a block is its
   real size, k item ids of 2 or 4 bytes per itemset); owners count what
   they receive (their own subsets directly);
3. each owner determines its large itemsets and sends them to every other
   rank (the pass-end all-to-all broadcast, where seed 000's synchronized
   losses happen); all ranks then know L_k and go on to pass k+1, until no
   itemset is large.

Pass 1 is the same with items as candidates: local item counts go to the
items' owners in one message per rank pair, which also carries the local
number of transactions so every rank learns D.

Under the simulator, computation is charged with :class:`CostModel` (a
deterministic cost per transaction, per subset formed and per itemset
probed); the real backends spend the real CPU time. Between passes each rank
trims its transactions as the serial Apriori does (:func:`apriori.trim`),
using its own hits and the broadcast L_k.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .apriori import Encoder, apriori_gen, candidate_subsets, hit_elems, min_count, trim
from .cost import SCAN_COST_FIELDS, CostModel
from .counting import CountOnlyBlocks, ItemsetBlocks, PassInputs, Tally, count_pass
from .quest import Transactions, load

TAG_PASS1 = 4801
TAG_LARGE = 4803  # (4802, the blocks of pass k, is counting.TAG_BLOCK)


def owner_of(rows: np.ndarray, size: int) -> np.ndarray:
    """The hash function: owner rank of each itemset (row of item ids)."""
    rows = np.asarray(rows)
    h = np.zeros(len(rows), dtype=np.uint64)
    mul = np.uint64(0x9E3779B97F4A7C15)
    for j in range(rows.shape[1]):
        h ^= rows[:, j].astype(np.uint64)
        h *= mul
        h ^= h >> np.uint64(29)
    return (h % np.uint64(size)).astype(np.int64)


def _is_sim(comm: Any) -> bool:
    from ...comm.sim import SimComm

    return isinstance(comm, SimComm)


async def _exchange(comm: Any, outgoing: list, nbytes: list[int], tag: int) -> list:
    """Send ``outgoing[r]`` to every other rank r, receive one message from
    each; returns the received payloads indexed by source (own slot: own)."""
    p, me = comm.size, comm.rank
    reqs = [comm.irecv(source=s, tag=tag) for s in range(p) if s != me]
    sends = [comm.isend(outgoing[d], dest=d, tag=tag, nbytes=nbytes[d]) for d in range(p) if d != me]
    got = await comm.waitall(reqs + sends)
    out = [None] * p
    for s, v in zip([s for s in range(p) if s != me], got):
        out[s] = v
    out[me] = outgoing[me]
    return out


def _lex_sorted(rows: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not len(rows):
        return rows, counts
    order = np.lexsort(rows.T[::-1])
    return rows[order], counts[order]


async def hpa(
    comm: Any,
    path: str,
    min_support: float,
    *,
    block_bytes: int = 8192,
    max_len: int | None = None,
    cost: CostModel | None = None,
    itemsets: str = "root",
    weight: int = 1,
    payload: str = "itemsets",
    pace_s: float = 0.05,
    cpu_scale: Any = None,
    wire: str = "itemsets",
) -> dict:
    """Mine ``path`` (a Quest binary or text transactions file) with HPA.
    Returns this rank's per-pass figures and, on rank 0 (``itemsets="root"``)
    or every rank (``"all"``), the frequent itemsets as (rows, counts) per k.

    ``weight``: every local transaction stands for ``weight`` identical
    transactions (a data set of ``weight`` copies of the file). Counts, the
    bytes of blocks and the CPU charged are multiplied by it; a block holds
    ``block_bytes // (k * itemsize * weight)`` distinct rows. The frequent
    itemsets and supports are those of the file.

    ``payload`` (simulator only): ``"itemsets"`` sends the real itemsets in
    every block; ``"counts"`` sends blocks of the same simulated size, at the
    same simulated times, carrying only their row count, while the sender
    tallies its subsets per candidate and the pair's last block carries
    those tallies for the owner's candidates -- the same counts reach the
    owner, at a fraction of the Python cost per block. With ``"counts"``
    each rank charges its CPU in steps of at most ``pace_s`` simulated
    seconds and sends each block when its last subset is formed, so blocks
    leave spread over the pass as they would from a real scan.

    ``wire`` (with ``payload="itemsets"``): how a block names its itemsets.
    ``"itemsets"``, the paper's, sends each itemset's k item ids; ``"index"``
    sends its position in C_k as an int32 -- every rank generates the same
    sorted C_k, so the position names the itemset as well, and the owner
    finds its counter with one array lookup instead of encoding the itemset
    and probing (4 bytes an itemset instead of 2k or 4k).

    ``cpu_scale`` (simulator only): ``cpu_scale[rank][k]`` multiplies the
    CPU charges of that rank's own scan in pass k (per transaction, item,
    subset and candidate; not the probes of received itemsets), see
    :func:`work_profile` and :func:`spread_scales`.
    """
    _check_options(block_bytes, weight, payload, wire)
    weight = int(weight)
    sim = _is_sim(comm)
    if cost is None and sim:
        cost = CostModel()
    if not sim:
        cost = None
        payload = "itemsets"
    tx = load(path, comm.rank, comm.size)
    scales = (cpu_scale[comm.rank] if cpu_scale is not None else {}) if cost else {}
    mode = _PassMode(payload, wire, block_bytes, weight, pace_s)
    return await _mine(comm, tx, min_support, max_len, cost, scales, mode, sim, itemsets)


def _check_options(block_bytes: int, weight: int, payload: str, wire: str) -> None:
    if block_bytes < 64:
        raise ValueError(f"block_bytes must be at least 64, got {block_bytes}")
    if int(weight) != weight or weight < 1:
        raise ValueError(f"weight must be a positive integer, got {weight}")
    if payload not in ("itemsets", "counts"):
        raise ValueError(f"payload must be 'itemsets' or 'counts', got {payload!r}")
    if wire not in ("itemsets", "index"):
        raise ValueError(f"wire must be 'itemsets' or 'index', got {wire!r}")


async def _mine(
    comm: Any,
    tx: Transactions,
    min_support: float,
    max_len: int | None,
    cost: CostModel | None,
    scales: dict,
    mode: _PassMode,
    sim: bool,
    itemsets: str,
) -> dict:
    """Every pass on this rank's transactions ``tx``; :func:`hpa`'s result."""
    me = comm.rank
    snapshots: list[dict] = []
    t_begin = comm.wtime()
    cpu_begin = time.process_time()
    if sim and me == 0:
        snapshots.append(_snapshot_counters(comm, 1))
    first, d_total, minc = await _pass1(comm, tx, mode.weight, cost, scales.get(1, 1.0), min_support)
    levels = [(first.rows, first.counts)]
    passes = [first.record]
    # passes k >= 2, until no itemset is large
    rows = first.rows
    mode = replace(mode, itemsize=2 if (len(rows) == 0 or int(rows.max()) < 65536) else 4)
    work = tx
    k = 2
    while len(levels[-1][0]) and (max_len is None or k <= max_len):
        if sim and me == 0:
            snapshots.append(_snapshot_counters(comm, k))
        done = await _pass_k(comm, k, levels[-1][0], work, minc, mode, _scaled(cost, scales.get(k, 1.0)), sim)
        if done is None:
            break
        levels.append((done.rows, done.counts))
        passes.append(done.record)
        work = done.work
        k += 1
    if sim and me == 0 and snapshots[-1]["pass"] != k:
        snapshots.append(_snapshot_counters(comm, k))
    if len(levels) > 1 and not len(levels[-1][0]):
        levels.pop()
    want = itemsets == "all" or (itemsets == "root" and me == 0)
    out_d = {
        "rank": me,
        "n_transactions": d_total,
        "local_transactions": len(tx) * mode.weight,
        "min_count": minc,
        "passes": passes,
        "time_s": comm.wtime() - t_begin,
        "levels": levels if want else None,
    }
    if not sim:  # this process's CPU seconds since loading (polling included)
        out_d["process_cpu_s"] = time.process_time() - cpu_begin
    if snapshots:
        out_d["counter_snapshots"] = snapshots
    return out_d


@dataclass
class _PassResult:
    """One pass on this rank: L_k (all ranks agree), its figures, the trimmed transactions."""

    rows: np.ndarray
    counts: np.ndarray
    record: dict
    work: Transactions | None = None


@dataclass(frozen=True)
class _PassMode:
    """How the passes k >= 2 send their subsets (``hpa``'s options)."""

    payload: str
    wire: str
    block_bytes: int
    weight: int
    pace_s: float
    itemsize: int = 2  # bytes of an item id: 2 while every id < 65536 (set from L_1)

    def per_block(self, k: int) -> int:
        row_bytes = 4 if self.wire == "index" and self.payload == "itemsets" else k * self.itemsize
        return max(1, self.block_bytes // (row_bytes * self.weight))

    def tally(self, comm: Any, inp: PassInputs) -> Tally:
        if self.payload == "counts":
            return CountOnlyBlocks(comm, inp, self.itemsize, self.pace_s)
        return ItemsetBlocks(comm, inp, np.uint16 if self.itemsize == 2 else np.uint32, self.wire)


def _scaled(cost: CostModel | None, scale: float) -> CostModel | None:
    """The cost model of a rank's own scan in one pass (``cpu_scale``)."""
    if cost is None or scale == 1.0:
        return cost
    return replace(cost, **{f: getattr(cost, f) * scale for f in SCAN_COST_FIELDS})


async def _pass1(
    comm: Any, tx: Transactions, weight: int, cost: CostModel | None, scale: float, min_support: float
) -> tuple[_PassResult, int, int]:
    """Item counts to their owners, the local number of transactions to everyone;
    returns L_1 and its figures, D and the minimum count."""
    p, me = comm.size, comm.rank
    t0 = comm.wtime()
    local = np.bincount(tx.items).astype(np.int64) * weight if len(tx.items) else np.zeros(0, np.int64)
    if cost:
        per_item1 = cost.per_probe_s if cost.pass1_per_item_s is None else cost.pass1_per_item_s
        await comm.compute(scale * weight * (cost.per_transaction_s * len(tx) + per_item1 * len(tx.items)))
    ids = np.nonzero(local)[0]
    own = owner_of(ids.reshape(-1, 1), p)
    out, nb = [], []
    for d in range(p):
        sel = own == d
        out.append((len(tx) * weight, ids[sel].astype(np.int32), local[ids[sel]].astype(np.int64)))
        nb.append(8 + 8 * int(sel.sum()))
    got = await _exchange(comm, out, nb, TAG_PASS1)
    d_total = sum(g[0] for g in got)
    minc = min_count(min_support, d_total)
    all_ids = np.concatenate([g[1] for g in got]).astype(np.int64)
    all_cnt = np.concatenate([g[2] for g in got]).astype(np.int64)
    width = int(all_ids.max()) + 1 if len(all_ids) else 0
    sums = np.bincount(all_ids, weights=all_cnt, minlength=width).astype(np.int64)
    owned_ids = np.nonzero(sums)[0]
    big = owned_ids[sums[owned_ids] >= minc]
    rows, counts, ncand = await _broadcast_large(comm, (big.reshape(-1, 1), sums[big], len(owned_ids)), 1)
    record = {
        "pass": 1,
        "candidates": ncand,
        "owned_candidates": len(owned_ids),
        "large": len(rows),
        "time_s": comm.wtime() - t0,
        "blocks_sent": 0,
        "bytes_sent": int(sum(nb) - nb[me]),
        "subsets": 0,
    }
    return _PassResult(rows, counts, record), d_total, minc


async def _pass_k(
    comm: Any,
    k: int,
    large: np.ndarray,
    work: Transactions,
    minc: int,
    mode: _PassMode,
    cost: CostModel | None,
    sim: bool,
) -> _PassResult | None:
    """Pass k >= 2 from L_{k-1}: candidates, the counting scan, the pass-end broadcast
    of the large itemsets, and this rank's transactions trimmed for pass k+1. None
    when there is no candidate."""
    p, me = comm.size, comm.rank
    t0 = comm.wtime()
    cand, enc, ckeys, cown = _prepare_pass(large, k, p, shared=sim)
    if not len(cand):
        return None
    mine_idx = np.nonzero(cown == me)[0]
    if cost:
        await comm.compute(cost.per_candidate_s * len(cand))
    foffs, fitems, _ = enc.filter(work)
    scan_s = mode.weight * (cost.per_transaction_s * len(work) + cost.per_item_s * len(work.items)) if cost else 0.0
    inp = PassInputs(k, cand, cown, mine_idx, enc, ckeys, foffs, fitems, mode.per_block(k), mode.weight, cost, scan_s)
    counted = await count_pass(comm, inp, mode.tally(comm, inp))
    big = counted.counts >= minc
    rows, lcounts, ncand = await _broadcast_large(comm, (cand[mine_idx[big]], counted.counts[big], len(mine_idx)), k)
    if counted.hit_idx is not None and counted.hit_elems is not None:  # trim with the global L_k
        is_large = np.zeros(len(cand), dtype=bool)
        if len(rows):
            lk = enc.keys(enc.dense(rows))
            pos = np.minimum(np.searchsorted(ckeys, lk), len(ckeys) - 1)
            is_large[pos] = True
        ok = [hit_elems(e, is_large[i]) for i, e in zip(counted.hit_idx, counted.hit_elems)]
        work = trim(foffs, fitems, enc, np.concatenate(ok) if ok else np.empty((0, k), np.int64))
    record = {
        "pass": k,
        "candidates": ncand,
        "owned_candidates": len(mine_idx),
        "large": len(rows),
        "time_s": comm.wtime() - t0,
        "blocks_sent": counted.blocks_sent,
        "bytes_sent": counted.bytes_sent,
        "subsets": counted.subsets,
        "start_s": t0,
        "flush_s": counted.scan_end_s,
    }
    return _PassResult(rows, lcounts, record, work)


_PREPARED: dict = {}


def _prepare_pass(large: np.ndarray, k: int, p: int, shared: bool) -> tuple:
    """C_k from L_{k-1}, its encoder, sorted keys and owners. Every rank
    computes the same thing; simulated ranks (one process) share one copy
    (read-only), keyed by the content of L_{k-1}."""
    key = None
    if shared:
        key = (k, p, large.shape, np.ascontiguousarray(large, dtype=np.int64).tobytes())
        hit = _PREPARED.get(key)
        if hit is not None:
            return hit
    if k == 2 and len(large) >= 2:  # C_2: every pair of L_1 (sorted, distinct); keys i*m + j directly
        enc = Encoder(large.ravel(), 2)
        i, j = np.triu_indices(len(large), 1)
        cand = np.stack([enc.items[i], enc.items[j]], axis=1)
        own = owner_of(cand, p)
        out = (cand, enc, i * enc.m + j, own.astype(np.int8) if p <= 127 else own)
    elif k == 2 or not len(cand := apriori_gen(large)):
        out = (np.empty((0, k), dtype=np.int64), None, None, None)
    else:
        enc = Encoder(cand.ravel(), k)
        own = owner_of(cand, p)
        out = (cand, enc, enc.keys(enc.dense(cand)), own.astype(np.int8) if p <= 127 else own)
    if shared:
        _PREPARED.clear()  # one pass at a time
        _PREPARED[key] = out
    return out


def _snapshot_counters(comm: Any, k: int) -> dict:
    """Retransmission counters of every simulated host when rank 0 starts pass k."""
    h = comm._world.sim.counters()["hosts"]
    return {
        "pass": k,
        "time_s": comm.wtime(),
        "bytes_retransmitted": list(h["bytes_retransmitted"]),
        "timeouts": list(h["timeouts"]),
        "segments_retransmitted": list(h["segments_retransmitted"]),
    }


async def _broadcast_large(comm: Any, mine: tuple, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The pass-end all-to-all broadcast of each owner's large itemsets.
    Returns L_k (rows in lexicographic order, counts) and |C_k|."""
    rows, counts, ncand = mine
    itemsize = 2 if (not len(rows) or int(rows.max()) < 65536) else 4
    nbytes = len(rows) * (k * itemsize + 4) + 8
    payload = (np.asarray(rows, dtype=np.int64), np.asarray(counts, dtype=np.int64), int(ncand))
    got = await _exchange(comm, [payload] * comm.size, [nbytes] * comm.size, TAG_LARGE)
    allrows = np.concatenate([g[0].reshape(-1, k) for g in got])
    allcnt = np.concatenate([g[1] for g in got])
    r, c = _lex_sorted(allrows, allcnt)
    return r, c, sum(g[2] for g in got)


def work_profile(
    path: str, size: int, min_support: float, cost: CostModel, *, weight: int = 1, max_len: int | None = None
) -> dict:
    """Each rank's CPU seconds per pass for its own scan under ``cost``
    (transactions, items, candidate subsets, candidate generation), computed
    serially with HPA's own steps (filter, candidate subsets, trimming with
    the global L_k), plus the itemsets it receives as an owner:
    ``{"cpu": cpu[rank][k], "subsets": ..., "received": ...}``. No timing is
    involved: with scales 1 it is what a simulated run charges for the scan."""
    from .apriori import apriori

    parts = [load(path, r, size) for r in range(size)]
    glob = apriori(load(path, 0, 1), min_support, max_len=max_len)
    per_item1 = cost.per_probe_s if cost.pass1_per_item_s is None else cost.pass1_per_item_s
    cpu = [{1: weight * (cost.per_transaction_s * len(t) + per_item1 * len(t.items))} for t in parts]
    subs = [{} for _ in parts]
    recv = [{} for _ in parts]
    work = list(parts)
    for k in range(2, len(glob.levels) + 2):
        if max_len is not None and k > max_len:
            break
        cand, enc, ckeys, cown = _prepare_pass(glob.levels[k - 2][0], k, size, shared=False)
        if not len(cand):
            break
        large = glob.levels[k - 1][0] if k - 1 < len(glob.levels) else np.empty((0, k), np.int64)
        is_large = np.zeros(len(cand), dtype=bool)
        if len(large):
            lk = enc.keys(enc.dense(large))
            is_large[np.minimum(np.searchsorted(ckeys, lk), len(ckeys) - 1)] = True
        received = np.zeros(size, dtype=np.int64)
        hits_of = []
        for r in range(size):
            foffs, fitems, _ = enc.filter(work[r])
            idx_l, el_l = [], []
            for idx, elems in candidate_subsets(foffs, fitems, enc, ckeys, with_elems=True):
                idx_l.append(idx)
                el_l.append(elems[is_large[idx]])
            idx = np.concatenate(idx_l) if idx_l else np.empty(0, np.int64)
            dest = cown[idx]
            received += np.bincount(dest[dest != r], minlength=size)
            hits_of.append(len(idx))
            scan = cost.per_transaction_s * len(work[r]) + cost.per_item_s * len(work[r].items)
            cpu[r][k] = weight * (scan + cost.per_subset_s * len(idx)) + cost.per_candidate_s * len(cand)
            subs[r][k] = weight * len(idx)
            work[r] = trim(foffs, fitems, enc, np.concatenate(el_l) if el_l else np.empty((0, k), np.int64))
        for r in range(size):
            recv[r][k] = weight * int(received[r])
    return {"cpu": cpu, "subsets": subs, "received": recv}


def spread_scales(cpu: list[dict], factor: float) -> list[dict]:
    """Per-rank, per-pass multipliers that keep each pass's mean CPU time
    over ranks and shrink every rank's deviation from it by ``factor``
    (``1/sqrt(weight)``: the spread of independent partitions ``weight``
    times larger than the sample's, instead of the sample's ``weight``-fold
    replication)."""
    keys = sorted({k for c in cpu for k in c})
    out: list[dict] = [{} for _ in cpu]
    for k in keys:
        xs = np.array([c.get(k, 0.0) for c in cpu])
        m = xs.mean()
        for r, x in enumerate(xs):
            out[r][k] = float((m + (x - m) * factor) / x) if x > 0 else 1.0
    return out


def merge_result(results: list[dict]) -> dict:
    """Per-pass table over ranks (time = slowest rank, counts summed) and the itemsets."""
    r0 = next(r for r in results if r.get("levels") is not None)
    passes = []
    for i, ps in enumerate(r0["passes"]):
        rows = [r["passes"][i] for r in results]
        passes.append(
            {
                "pass": ps["pass"],
                "candidates": ps["candidates"],
                "large": ps["large"],
                "time_s": max(x["time_s"] for x in rows),
                "blocks_sent": sum(x["blocks_sent"] for x in rows),
                "bytes_sent": sum(x["bytes_sent"] for x in rows),
            }
        )
    return {
        "n_transactions": r0["n_transactions"],
        "min_count": r0["min_count"],
        "passes": passes,
        "levels": r0["levels"],
        "time_s": max(r["time_s"] for r in results),
        "process_cpu_s": sum(r.get("process_cpu_s", 0.0) for r in results),
    }


def levels_to_dict(levels) -> dict[tuple[int, ...], int]:
    out: dict[tuple[int, ...], int] = {}
    for rows, counts in levels:
        for r, c in zip(np.asarray(rows).tolist(), np.asarray(counts).tolist()):
            out[tuple(r)] = c
    return out


__all__ = [
    "CostModel",
    "Transactions",
    "hpa",
    "merge_result",
    "levels_to_dict",
    "owner_of",
    "work_profile",
    "spread_scales",
]
