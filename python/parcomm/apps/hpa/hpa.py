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

from .apriori import (
    MAX_ROWS,
    TRIM_LIMIT,
    Encoder,
    apriori_gen,
    candidate_subsets,
    hit_elems,
    min_count,
    n_subsets,
    trim,
    use_table,
)
from .quest import Transactions, load

TAG_PASS1 = 4801
TAG_BLOCK = 4802
TAG_LARGE = 4803


@dataclass(frozen=True)
class CostModel:
    """CPU seconds charged by simulated ranks. The defaults are rough
    figures for a 200 MHz Pentium Pro (seed 000 Table 1) scanning and
    hashing in C: a few hundred cycles per transaction read, per k-subset
    formed and hashed, and per hash-table probe of a received itemset. The
    ``oguchi`` study replaces them with a model calibrated on Table 2
    (:func:`parcomm.studies.oguchi.calibrated_cost`).

    Pass 1 charges ``per_transaction_s`` per transaction plus
    ``pass1_per_item_s`` (``per_probe_s`` when None) per item read and
    counted; pass k >= 2 charges ``per_candidate_s`` per candidate,
    ``per_subset_s`` per candidate k-subset found, ``per_probe_s`` per
    itemset the owner looks up, and ``per_transaction_s`` per transaction
    plus ``per_item_s`` per item of the (trimmed) transactions scanned."""

    per_transaction_s: float = 2e-6
    per_subset_s: float = 0.5e-6
    per_probe_s: float = 1e-6
    per_candidate_s: float = 0.2e-6  # candidate generation and insertion
    per_item_s: float = 0.0
    pass1_per_item_s: float | None = None


# the charges of a rank's own scan, scaled by ``cpu_scale`` (an owner's probes of what
# it receives depend on which candidates it owns, not on its own partition)
_COST_FIELDS = ("per_transaction_s", "per_subset_s", "per_candidate_s", "per_item_s")


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
    p, me = comm.size, comm.rank
    if block_bytes < 64:
        raise ValueError(f"block_bytes must be at least 64, got {block_bytes}")
    if int(weight) != weight or weight < 1:
        raise ValueError(f"weight must be a positive integer, got {weight}")
    if payload not in ("itemsets", "counts"):
        raise ValueError(f"payload must be 'itemsets' or 'counts', got {payload!r}")
    if wire not in ("itemsets", "index"):
        raise ValueError(f"wire must be 'itemsets' or 'index', got {wire!r}")
    weight = int(weight)
    sim = _is_sim(comm)
    if cost is None and sim:
        cost = CostModel()
    if not sim:
        cost = None
        payload = "itemsets"
    tx = load(path, me, p)
    scales = (cpu_scale[me] if cpu_scale is not None else {}) if cost else {}
    passes: list[dict] = []
    levels: list[tuple[np.ndarray, np.ndarray]] = []
    snapshots: list[dict] = []
    t_begin = comm.wtime()
    cpu_begin = time.process_time()
    if sim and me == 0:
        snapshots.append(_snapshot_counters(comm, 1))

    # ---- pass 1: item counts to their owners, local D to everyone
    t0 = comm.wtime()
    local = np.bincount(tx.items).astype(np.int64) * weight if len(tx.items) else np.zeros(0, np.int64)
    if cost:
        per_item1 = cost.per_probe_s if cost.pass1_per_item_s is None else cost.pass1_per_item_s
        await comm.compute(scales.get(1, 1.0) * weight * (cost.per_transaction_s * len(tx) + per_item1 * len(tx.items)))
    ids = np.nonzero(local)[0]
    own = owner_of(ids.reshape(-1, 1), p)
    out, nb = [], []
    for d in range(p):
        sel = own == d
        msg = (len(tx) * weight, ids[sel].astype(np.int32), local[ids[sel]].astype(np.int64))
        out.append(msg)
        nb.append(8 + 8 * int(sel.sum()))
    got = await _exchange(comm, out, nb, TAG_PASS1)
    d_total = sum(g[0] for g in got)
    minc = min_count(min_support, d_total)
    all_ids = np.concatenate([g[1] for g in got]).astype(np.int64)
    all_cnt = np.concatenate([g[2] for g in got]).astype(np.int64)
    width = int(all_ids.max()) + 1 if len(all_ids) else 0
    sums = np.bincount(all_ids, weights=all_cnt, minlength=width).astype(np.int64)
    owned_ids = np.nonzero(sums)[0]
    n_owned = len(owned_ids)
    big = owned_ids[sums[owned_ids] >= minc]
    mine = (big.reshape(-1, 1), sums[big], n_owned)
    rows, counts, ncand = await _broadcast_large(comm, mine, 1)
    levels.append((rows, counts))
    passes.append(
        {
            "pass": 1,
            "candidates": ncand,
            "owned_candidates": n_owned,
            "large": len(rows),
            "time_s": comm.wtime() - t0,
            "blocks_sent": 0,
            "bytes_sent": int(sum(nb) - nb[me]),
            "subsets": 0,
        }
    )

    # ---- passes k >= 2
    base_cost = cost
    work = tx
    itemsize = 2 if (len(rows) == 0 or int(rows.max()) < 65536) else 4
    dtype = np.uint16 if itemsize == 2 else np.uint32
    k = 2
    while len(levels[-1][0]) and (max_len is None or k <= max_len):
        if sim and me == 0:
            snapshots.append(_snapshot_counters(comm, k))
        t0 = comm.wtime()
        cand, enc, ckeys, cown = _prepare_pass(levels[-1][0], k, p, shared=sim)
        if not len(cand):
            break
        mine_idx = np.nonzero(cown == me)[0]
        if cost and scales.get(k, 1.0) != 1.0:
            cost = replace(base_cost, **{f: getattr(base_cost, f) * scales[k] for f in _COST_FIELDS})
        elif cost:
            cost = base_cost
        if cost:
            await comm.compute(cost.per_candidate_s * len(cand))
        row_bytes = 4 if wire == "index" and payload == "itemsets" else k * itemsize
        per_block = max(1, block_bytes // (row_bytes * weight))
        foffs, fitems, _ = enc.filter(work)
        scan_s = weight * (cost.per_transaction_s * len(work) + cost.per_item_s * len(work.items)) if cost else 0.0
        if payload == "counts":
            counts, hit_idx, hit_elems_l, nblocks, nbytes_sent, nsub, scan_end = await _count_pass_paced(
                comm,
                k,
                cand,
                cown,
                mine_idx,
                enc,
                ckeys,
                foffs,
                fitems,
                per_block,
                itemsize,
                weight,
                cost,
                scan_s,
                pace_s,
            )
        else:
            counts, hit_idx, hit_elems_l, nblocks, nbytes_sent, nsub, scan_end = await _count_pass_blocks(
                comm, k, cand, cown, mine_idx, enc, ckeys, foffs, fitems, per_block, dtype, weight, cost, scan_s, wire
            )
        hit_elems_ = hit_elems_l
        big = counts >= minc
        mine = (cand[mine_idx[big]], counts[big], len(mine_idx))
        rows, lcounts, ncand = await _broadcast_large(comm, mine, k)
        levels.append((rows, lcounts))
        # trim local transactions for the next pass with the global L_k
        if hit_idx is not None:
            is_large = np.zeros(len(cand), dtype=bool)
            if len(rows):
                lk = enc.keys(enc.dense(rows))
                pos = np.minimum(np.searchsorted(ckeys, lk), len(ckeys) - 1)
                is_large[pos] = True
            ok = [hit_elems(e, is_large[i]) for i, e in zip(hit_idx, hit_elems_)]  # type: ignore[arg-type]
            work = trim(foffs, fitems, enc, np.concatenate(ok) if ok else np.empty((0, k), np.int64))
        passes.append(
            {
                "pass": k,
                "candidates": ncand,
                "owned_candidates": len(mine_idx),
                "large": len(rows),
                "time_s": comm.wtime() - t0,
                "blocks_sent": nblocks,
                "bytes_sent": nbytes_sent,
                "subsets": nsub,
                "start_s": t0,
                "flush_s": scan_end,
            }
        )
        k += 1
    if sim and me == 0 and snapshots[-1]["pass"] != k:
        snapshots.append(_snapshot_counters(comm, k))
    if len(levels) > 1 and not len(levels[-1][0]):
        levels.pop()
    want = itemsets == "all" or (itemsets == "root" and me == 0)
    out_d = {
        "rank": me,
        "n_transactions": d_total,
        "local_transactions": len(tx) * weight,
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


async def _count_pass_blocks(
    comm, k, cand, cown, mine_idx, enc, ckeys, foffs, fitems, per_block, dtype, weight, cost, scan_s, wire="itemsets"
):
    """Pass k's counting with real itemsets in the blocks (every backend)."""
    p, me = comm.size, comm.rank
    counts = np.zeros(len(mine_idx), dtype=np.int64)
    my_keys = ckeys[mine_idx]
    pending: list[list[np.ndarray]] = [[] for _ in range(p)]
    npend = [0] * p
    sends: list = []
    nblocks = 0
    nbytes_sent = 0
    nsub = 0
    hit_idx: list[np.ndarray] | None = []
    hit_elems: list[np.ndarray] | None = []
    nhits = 0

    # owner side: received itemsets -> index among the owned candidates
    # (a direct table while the key space is small, else a binary search);
    # positions are gathered and counted with one bincount per ~1M
    table = None
    if wire == "itemsets" and use_table(enc, len(my_keys), n_subsets(foffs, k)):
        table = np.full(enc.m**k, -1, dtype=np.int32)
        table[my_keys] = np.arange(len(my_keys), dtype=np.int32)
    got: list[np.ndarray] = []
    ngot = 0

    def tally(pos: np.ndarray) -> None:
        nonlocal got, ngot
        got.append(pos)
        ngot += len(pos)
        if ngot > MAX_ROWS:
            counts[:] += np.bincount(np.concatenate(got), minlength=len(mine_idx))
            got, ngot = [], 0

    # own subsets: candidate index -> index among the owned candidates (a dense map)
    local_of = np.full(len(cand), -1, dtype=np.int32)
    local_of[mine_idx] = np.arange(len(mine_idx), dtype=np.int32)

    def local_count(idx: np.ndarray) -> None:
        tally(local_of[idx])

    def send_block(d: int, blk: np.ndarray, fin: bool) -> None:
        nonlocal nblocks, nbytes_sent
        nb = blk.nbytes * weight
        sends.append(comm.isend((blk, fin), dest=d, tag=TAG_BLOCK, nbytes=nb))
        nblocks += 1
        nbytes_sent += nb

    def emit(d: int, last: bool) -> None:
        arr = (
            np.concatenate(pending[d])
            if pending[d]
            else np.empty((0, k), dtype=dtype)
            if wire == "itemsets"
            else np.empty(0, dtype=np.int32)
        )
        pending[d], npend[d] = [], 0
        for s in range(0, max(len(arr), 1), per_block):
            blk = arr[s : s + per_block]
            fin = last and s + per_block >= len(arr)
            if not len(blk) and not fin:
                continue
            send_block(d, blk, fin)

    finished = 0

    async def absorb(msg: tuple) -> None:
        nonlocal finished
        blk, fin = msg
        finished += bool(fin)
        if len(blk):
            if wire == "index":
                tally(local_of[blk])
            else:
                bk = enc.keys(enc.dense(blk.astype(np.int64)))
                tally(table[bk] if table is not None else np.searchsorted(my_keys, bk))
            if cost:
                await comm.compute(cost.per_probe_s * len(blk) * weight)

    # owners count blocks as they arrive, between chunks of their own scan
    # (the paper runs a second process per node for this)
    rreq = comm.irecv(tag=TAG_BLOCK) if p > 1 else None
    for idx, elems in candidate_subsets(foffs, fitems, enc, ckeys, with_elems="lazy"):
        nsub += len(idx) * weight
        if hit_idx is not None:  # remembered for trimming, up to TRIM_LIMIT hits
            nhits += len(idx)
            if nhits > TRIM_LIMIT:
                hit_idx = hit_elems = None
            else:
                hit_idx.append(idx)
                hit_elems.append(elems)
        if cost:
            # each candidate subset found is hashed and routed
            await comm.compute(cost.per_subset_s * len(idx) * weight)
        dest = cown[idx] if p > 1 else None
        for d in range(p):
            sel = idx[dest == d] if p > 1 else idx
            if not len(sel):
                continue
            if d == me:
                local_count(sel)
                continue
            pending[d].append(cand[sel].astype(dtype) if wire == "itemsets" else sel.astype(np.int32))
            npend[d] += len(sel)
            if npend[d] >= per_block:
                full = (npend[d] // per_block) * per_block
                arr = np.concatenate(pending[d])
                pending[d], npend[d] = [arr[full:]], npend[d] - full
                for s in range(0, full, per_block):
                    send_block(d, arr[s : s + per_block], False)
        while rreq is not None:
            done, msg = rreq.test()
            if not done:
                break
            rreq = comm.irecv(tag=TAG_BLOCK) if finished + bool(msg[1]) < p - 1 else None
            await absorb(msg)
    if cost:
        await comm.compute(scan_s)
    scan_end = comm.wtime()
    for d in range(p):
        if d != me:
            emit(d, last=True)
    # then the rest of what the others send
    while rreq is not None:
        msg = await comm.wait(rreq)
        rreq = comm.irecv(tag=TAG_BLOCK) if finished + bool(msg[1]) < p - 1 else None
        await absorb(msg)
    await comm.waitall(sends)
    if got:
        counts[:] += np.bincount(np.concatenate(got), minlength=len(mine_idx))
    return counts * weight, hit_idx, hit_elems, nblocks, nbytes_sent, nsub, scan_end


async def _count_pass_paced(
    comm, k, cand, cown, mine_idx, enc, ckeys, foffs, fitems, per_block, itemsize, weight, cost, scan_s, pace_s
):
    """Pass k's counting under the simulator with count-only blocks (see ``hpa``'s ``payload``)."""
    p, me = comm.size, comm.rank
    row_bytes = k * itemsize * weight
    tallies = np.zeros(len(cand), dtype=np.int64)  # this rank's subsets per candidate (filled after the scan)
    fill = np.zeros(p, dtype=np.int64)  # rows pending per destination
    sends: list = []
    nblocks = 0
    nbytes_sent = 0
    nsub = 0
    hit_idx: list[np.ndarray] | None = []
    hit_elems: list[np.ndarray] | None = []
    nhits = 0
    probe_rows = 0  # rows received and not yet charged
    finished = 0
    received: list[np.ndarray] = []
    rreq = comm.irecv(tag=TAG_BLOCK) if p > 1 else None
    per_sub = cost.per_subset_s * weight if cost else 0.0
    per_probe = cost.per_probe_s * weight if cost else 0.0

    def take(msg) -> None:
        nonlocal finished, probe_rows
        if isinstance(msg, int):  # a full block: its row count
            probe_rows += msg
            return
        nrows, tal = msg  # the pair's last block and the sender's tallies
        probe_rows += nrows
        finished += 1
        received.append(tal)

    def poll() -> None:
        nonlocal rreq
        while rreq is not None:
            done, msg = rreq.test()
            if not done:
                break
            rreq = comm.irecv(tag=TAG_BLOCK) if finished + (not isinstance(msg, int)) < p - 1 else None
            take(msg)

    def send(d: int, nrows: int, fin: bool) -> None:
        nonlocal nblocks, nbytes_sent
        nb = nrows * row_bytes
        msg = (nrows, tallies[mine_of[d]]) if fin else nrows
        sends.append(comm.isend(msg, dest=d, tag=TAG_BLOCK, nbytes=nb))
        nblocks += 1
        nbytes_sent += nb

    owners = cown
    by_owner = np.argsort(
        owners.astype(np.int16), kind="stable"
    )  # radix sort (p <= 32767)  # candidate indices grouped by owner, ascending within
    bounds = np.searchsorted(owners[by_owner], np.arange(p + 1))
    mine_of = [by_owner[bounds[d] : bounds[d + 1]] for d in range(p)]
    all_idx: list[np.ndarray] = []
    for idx, elems in candidate_subsets(foffs, fitems, enc, ckeys, with_elems="lazy"):
        nsub += len(idx) * weight
        if hit_idx is not None:
            nhits += len(idx)
            if nhits > TRIM_LIMIT:
                hit_idx = hit_elems = None
            else:
                hit_idx.append(idx)
                hit_elems.append(elems)
        all_idx.append(idx)
        dest = owners[idx]
        # where in this chunk each remote destination's block fills up
        order = np.argsort(dest.astype(np.int16), kind="stable")
        ds = dest[order]
        starts = np.searchsorted(ds, np.arange(p))
        rank_in = np.arange(len(ds)) - starts[ds]
        full = ((fill[ds] + rank_in + 1) % per_block == 0) & (ds != me)
        at = np.sort(order[full])  # positions (subset number in chunk) where a block completes
        fill += np.bincount(dest, minlength=p)
        fill %= per_block
        fill[me] = 0
        # charge the chunk's CPU in steps of at most pace_s, sending blocks as they fill
        done_pos = 0
        step = max(1, int(pace_s / per_sub)) if per_sub > 0 else max(1, len(idx))
        j = 0
        while done_pos < len(idx):
            upto = min(len(idx), done_pos + step)
            if cost:
                extra = probe_rows * per_probe
                probe_rows = 0
                await comm.compute((upto - done_pos) * per_sub + extra)
            while j < len(at) and at[j] < upto:
                send(int(dest[at[j]]), per_block, False)
                j += 1
            done_pos = upto
            poll()
    if cost:
        await comm.compute(scan_s + probe_rows * per_probe)
        probe_rows = 0
    if all_idx:
        tallies += np.bincount(np.concatenate(all_idx), minlength=len(cand))
    for d in range(p):
        if d != me:
            send(d, int(fill[d]), True)
    scan_end = comm.wtime()
    while rreq is not None:
        msg = await comm.wait(rreq)
        rreq = comm.irecv(tag=TAG_BLOCK) if finished + (not isinstance(msg, int)) < p - 1 else None
        take(msg)
    if cost and probe_rows:
        await comm.compute(probe_rows * per_probe)
    await comm.waitall(sends)
    counts = tallies[mine_idx].copy()
    for tal in received:
        counts += tal
    return counts * weight, hit_idx, hit_elems, nblocks, nbytes_sent, nsub, scan_end


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
