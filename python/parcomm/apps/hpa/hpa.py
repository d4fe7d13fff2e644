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

from dataclasses import dataclass
from typing import Any

import numpy as np

from .apriori import LUT_LIMIT, MAX_ROWS, TRIM_LIMIT, Encoder, apriori_gen, candidate_subsets, min_count, trim
from .quest import Transactions, load

TAG_PASS1 = 4801
TAG_BLOCK = 4802
TAG_LARGE = 4803


@dataclass(frozen=True)
class CostModel:
    """CPU seconds charged by simulated ranks. The defaults are rough
    figures for a 200 MHz Pentium Pro (seed 000 Table 1) scanning and
    hashing in C: a few hundred cycles per transaction read, per k-subset
    formed and hashed, and per hash-table probe of a received itemset. They
    are placeholders until the oguchi study calibrates them."""

    per_transaction_s: float = 2e-6
    per_subset_s: float = 0.5e-6
    per_probe_s: float = 1e-6
    per_candidate_s: float = 0.2e-6  # candidate generation and insertion


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


async def hpa(comm: Any, path: str, min_support: float, *, block_bytes: int = 8192,
              max_len: int | None = None, cost: CostModel | None = None, itemsets: str = "root") -> dict:
    """Mine ``path`` (a Quest binary or text transactions file) with HPA.
    Returns this rank's per-pass figures and, on rank 0 (``itemsets="root"``)
    or every rank (``"all"``), the frequent itemsets as (rows, counts) per k."""
    p, me = comm.size, comm.rank
    if block_bytes < 64:
        raise ValueError(f"block_bytes must be at least 64, got {block_bytes}")
    sim = _is_sim(comm)
    if cost is None and sim:
        cost = CostModel()
    if not sim:
        cost = None
    tx = load(path, me, p)
    passes: list[dict] = []
    levels: list[tuple[np.ndarray, np.ndarray]] = []
    t_begin = comm.wtime()

    # ---- pass 1: item counts to their owners, local D to everyone
    t0 = comm.wtime()
    local = np.bincount(tx.items).astype(np.int64) if len(tx.items) else np.zeros(0, np.int64)
    if cost:
        await comm.compute(cost.per_transaction_s * len(tx) + cost.per_probe_s * len(tx.items))
    ids = np.nonzero(local)[0]
    own = owner_of(ids.reshape(-1, 1), p)
    out, nb = [], []
    for d in range(p):
        sel = own == d
        msg = (len(tx), ids[sel].astype(np.int32), local[ids[sel]].astype(np.int32))
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
    passes.append({"pass": 1, "candidates": ncand, "owned_candidates": n_owned, "large": len(rows),
                   "time_s": comm.wtime() - t0, "blocks_sent": 0, "bytes_sent": int(sum(nb) - nb[me])})

    # ---- passes k >= 2
    work = tx
    itemsize = 2 if (len(rows) == 0 or int(rows.max()) < 65536) else 4
    dtype = np.uint16 if itemsize == 2 else np.uint32
    k = 2
    while len(levels[-1][0]) and (max_len is None or k <= max_len):
        t0 = comm.wtime()
        cand = apriori_gen(levels[-1][0])
        if not len(cand):
            break
        enc = Encoder(cand.ravel(), k)
        ckeys = enc.keys(enc.dense(cand))
        cown = owner_of(cand, p)
        mine_idx = np.nonzero(cown == me)[0]
        counts = np.zeros(len(mine_idx), dtype=np.int64)
        my_keys = ckeys[mine_idx]
        if cost:
            await comm.compute(cost.per_candidate_s * len(cand))
        per_block = max(1, block_bytes // (k * itemsize))
        pending: list[list[np.ndarray]] = [[] for _ in range(p)]
        npend = [0] * p
        sends: list = []
        nblocks = 0
        nbytes_sent = 0
        hit_idx: list[np.ndarray] | None = []
        hit_elems: list[np.ndarray] | None = []
        nhits = 0

        # owner side: received itemsets -> index among the owned candidates
        # (a direct table while the key space is small, else a binary search);
        # positions are gathered and counted with one bincount per ~1M
        table = None
        if enc.int_keys and enc.m ** k <= LUT_LIMIT:
            table = np.full(enc.m ** k, -1, dtype=np.int32)
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

        def local_count(idx: np.ndarray) -> None:
            tally(np.searchsorted(mine_idx, idx))

        def emit(d: int, last: bool) -> None:
            nonlocal nblocks, nbytes_sent
            arr = np.concatenate(pending[d]) if pending[d] else np.empty((0, k), dtype=dtype)
            pending[d], npend[d] = [], 0
            for s in range(0, max(len(arr), 1), per_block):
                blk = arr[s:s + per_block]
                fin = last and s + per_block >= len(arr)
                if not len(blk) and not fin:
                    continue
                sends.append(comm.isend((blk, fin), dest=d, tag=TAG_BLOCK, nbytes=blk.nbytes))
                nblocks += 1
                nbytes_sent += blk.nbytes

        finished = 0

        async def absorb(msg: tuple) -> None:
            nonlocal finished
            blk, fin = msg
            finished += bool(fin)
            if len(blk):
                bk = enc.keys(enc.dense(blk.astype(np.int64)))
                tally(table[bk] if table is not None else np.searchsorted(my_keys, bk))
                if cost:
                    await comm.compute(cost.per_probe_s * len(blk))

        # owners count blocks as they arrive, between chunks of their own scan
        # (the paper runs a second process per node for this)
        rreq = comm.irecv(tag=TAG_BLOCK) if p > 1 else None
        foffs, fitems, _ = enc.filter(work)
        for idx, elems in candidate_subsets(foffs, fitems, enc, ckeys, with_elems=True):
            if hit_idx is not None:  # remembered for trimming, up to TRIM_LIMIT hits
                nhits += len(idx)
                if nhits > TRIM_LIMIT:
                    hit_idx = hit_elems = None
                else:
                    hit_idx.append(idx)
                    hit_elems.append(elems)
            if cost:
                # each candidate subset found is hashed and routed
                await comm.compute(cost.per_subset_s * len(idx))
            dest = cown[idx]
            for d in range(p):
                sel = idx[dest == d]
                if not len(sel):
                    continue
                if d == me:
                    local_count(sel)
                    continue
                pending[d].append(cand[sel].astype(dtype))
                npend[d] += len(sel)
                if npend[d] >= per_block:
                    full = (npend[d] // per_block) * per_block
                    arr = np.concatenate(pending[d])
                    pending[d], npend[d] = [arr[full:]], npend[d] - full
                    for s in range(0, full, per_block):
                        blk = arr[s:s + per_block]
                        sends.append(comm.isend((blk, False), dest=d, tag=TAG_BLOCK, nbytes=blk.nbytes))
                        nblocks += 1
                        nbytes_sent += blk.nbytes
            while rreq is not None:
                done, msg = rreq.test()
                if not done:
                    break
                rreq = comm.irecv(tag=TAG_BLOCK) if finished + bool(msg[1]) < p - 1 else None
                await absorb(msg)
        if cost:
            await comm.compute(cost.per_transaction_s * len(work))
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
            ok = [e[is_large[i]] for i, e in zip(hit_idx, hit_elems)]  # type: ignore[arg-type]
            work = trim(foffs, fitems, enc, np.concatenate(ok) if ok else np.empty((0, k), np.int64))
        passes.append({"pass": k, "candidates": ncand, "owned_candidates": len(mine_idx), "large": len(rows),
                       "time_s": comm.wtime() - t0, "blocks_sent": nblocks, "bytes_sent": nbytes_sent})
        k += 1
    if len(levels) > 1 and not len(levels[-1][0]):
        levels.pop()
    want = itemsets == "all" or (itemsets == "root" and me == 0)
    return {"rank": me, "n_transactions": d_total, "local_transactions": len(tx), "min_count": minc,
            "passes": passes, "time_s": comm.wtime() - t_begin, "levels": levels if want else None}


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


def merge_result(results: list[dict]) -> dict:
    """Per-pass table over ranks (time = slowest rank, counts summed) and the itemsets."""
    r0 = next(r for r in results if r.get("levels") is not None)
    passes = []
    for i, ps in enumerate(r0["passes"]):
        rows = [r["passes"][i] for r in results]
        passes.append({"pass": ps["pass"], "candidates": ps["candidates"], "large": ps["large"],
                       "time_s": max(x["time_s"] for x in rows),
                       "blocks_sent": sum(x["blocks_sent"] for x in rows),
                       "bytes_sent": sum(x["bytes_sent"] for x in rows)})
    return {"n_transactions": r0["n_transactions"], "min_count": r0["min_count"], "passes": passes,
            "levels": r0["levels"], "time_s": max(r["time_s"] for r in results)}


def levels_to_dict(levels) -> dict[tuple[int, ...], int]:
    out: dict[tuple[int, ...], int] = {}
    for rows, counts in levels:
        for r, c in zip(np.asarray(rows).tolist(), np.asarray(counts).tolist()):
            out[tuple(r)] = c
    return out


__all__ = ["CostModel", "Transactions", "hpa", "merge_result", "levels_to_dict", "owner_of"]
