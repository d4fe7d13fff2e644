"""Serial Apriori (Agrawal & Srikant, VLDB '94), vectorized with numpy, and
rule generation.

Pass 1 counts items with ``np.bincount``. Pass k >= 2 builds the candidates
C_k from L_{k-1} (join on the first k-2 items, prune candidates with an
infrequent (k-1)-subset), then counts them without a Python loop per itemset
or per transaction:

* items that occur in no candidate are removed from every transaction and the
  remaining ones renumbered densely (0..m-1, order kept), so transactions
  shrink pass after pass; transactions shorter than k are dropped;
* transactions are grouped by length l; for each group the C(l, k) index
  combinations address all k-subsets at once (an (n, C(l,k)) key array);
* each subset becomes one sortable key (mixed radix m, an int64 while m^k
  fits, else a big-endian byte string), located among the candidates by a
  direct table (key -> candidate index) while m^k <= LUT_LIMIT, else by
  ``np.searchsorted`` in the sorted candidate keys; hits are counted with
  ``np.bincount``;
* after each pass, transactions are trimmed (:func:`trim`).

The same kernel (:func:`candidate_subsets`) gives HPA the subsets to send.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import Iterator

import numpy as np

from .quest import Transactions

MAX_ROWS = 1 << 20  # subsets materialised at once (bounds memory)
LUT_LIMIT = 1 << 23  # below this many possible keys, candidates are found by direct table lookup


def min_count(min_support: float, n_transactions: int) -> int:
    """Smallest count c with c / D >= min_support (the float comparison the
    usual implementations make, so results agree exactly)."""
    if not 0 <= min_support <= 1:
        raise ValueError(f"min_support must be in [0, 1], got {min_support}")
    d = max(1, n_transactions)
    c = max(1, math.ceil(min_support * d))
    while c > 1 and (c - 1) / d >= min_support:
        c -= 1
    while c / d < min_support:
        c += 1
    return c


@lru_cache(maxsize=256)
def _combos(l: int, k: int) -> np.ndarray:
    return np.array(list(combinations(range(l), k)), dtype=np.int64).reshape(-1, k)


class Encoder:
    """Dense renumbering of the items of a candidate set, and sortable keys
    for k-itemsets over those items."""

    KEY_LIMIT = 2**62  # int64 keys while m**k stays below this

    def __init__(self, items: np.ndarray, k: int):
        self.items = np.unique(np.asarray(items, dtype=np.int64))
        self.m = len(self.items)
        self.k = k
        self.lut = np.full(int(self.items[-1]) + 2 if self.m else 1, -1, dtype=np.int64)
        self.lut[self.items] = np.arange(self.m)
        self.int_keys = self.m ** k < self.KEY_LIMIT if self.m else True
        self.radix = np.array([self.m ** (k - 1 - j) for j in range(k)], dtype=np.int64) if self.int_keys else None

    def dense(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.full(rows.shape, -1, dtype=np.int64)
        ok = rows < len(self.lut)
        out[ok] = self.lut[rows[ok]]
        return out

    def keys(self, dense_rows: np.ndarray) -> np.ndarray:
        """Keys of (n, k) dense rows; sorting keys sorts rows lexicographically."""
        if self.int_keys:
            key = dense_rows[:, 0] * self.radix[0]
            for j in range(1, self.k):
                key += dense_rows[:, j] * self.radix[j]
            return key
        be = np.ascontiguousarray(dense_rows.astype(">u4"))
        return be.view(f"V{4 * self.k}").ravel()

    def subset_keys(self, mat: np.ndarray, comb: np.ndarray) -> np.ndarray:
        """Keys of all subsets ``mat[:, comb]``, row-major, without
        materialising the (n, C, k) subsets when keys are integers."""
        if not self.int_keys:
            return self.keys(mat[:, comb].reshape(-1, self.k))
        key = mat[:, comb[:, 0]] * self.radix[0]
        for j in range(1, self.k):
            key += mat[:, comb[:, j]] * self.radix[j]
        return key.ravel()

    def filter(self, tx: Transactions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Transactions reduced to candidate items (dense ids), those with at
        least k of them. Returns CSR (offsets, items) and the kept
        transactions' indices in ``tx``."""
        d = self.dense(tx.items)
        keep = d >= 0
        tid = np.repeat(np.arange(len(tx), dtype=np.int64), tx.lengths)[keep]
        d = d[keep]
        lens = np.bincount(tid, minlength=len(tx))
        long_enough = lens >= self.k
        kept = np.nonzero(long_enough)[0]
        if len(kept) != len(tx):
            d, lens = d[long_enough[tid]], lens[long_enough]
        offs = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=offs[1:])
        return offs, d.astype(np.int32), kept


def subsets(offsets: np.ndarray, items: np.ndarray, k: int, max_rows: int = MAX_ROWS) -> Iterator:
    """The k-subsets of every transaction, chunk by chunk, as ``(mat, sel,
    comb)``: ``mat`` holds transactions ``sel`` (all of one length l) as rows,
    ``comb`` the C(l, k) position combinations, so ``mat[:, comb]`` are the
    subsets (see :meth:`Encoder.subset_keys`)."""
    lens = np.diff(offsets)
    for l in np.unique(lens[lens >= k]).tolist():
        idx = np.nonzero(lens == l)[0]
        comb = _combos(l, k)
        per = max(1, max_rows // len(comb))
        cols = np.arange(l)
        for s in range(0, len(idx), per):
            sel = idx[s:s + per]
            yield items[offsets[sel][:, None] + cols], sel, comb


def candidate_subsets(offsets: np.ndarray, items: np.ndarray, enc: Encoder, cand_keys: np.ndarray,
                      max_rows: int = MAX_ROWS, with_elems: bool = False) -> Iterator:
    """For each chunk, the indices (into the sorted candidates) of the
    k-subsets of the transactions (CSR of dense ids, from
    :meth:`Encoder.filter`) that are candidates, with repetition. With
    ``with_elems``: pairs ``(indices, elems)``, ``elems`` the (n, k)
    positions in ``items`` of each hit's items (for :func:`trim`)."""
    if not len(cand_keys):
        return
    lut = None
    if enc.int_keys and enc.m ** enc.k <= LUT_LIMIT:  # direct table: key -> candidate index or -1
        lut = np.full(enc.m ** enc.k, -1, dtype=np.int32)
        lut[cand_keys] = np.arange(len(cand_keys), dtype=np.int32)
    # every k-subset is a candidate (pass 2: C_2 is all pairs of L_1, and the
    # transactions hold only L_1 items): no need to test for hits
    complete = len(cand_keys) == math.comb(enc.m, enc.k)
    for mat, sel, comb in subsets(offsets, items, enc.k, max_rows):
        keys = enc.subset_keys(mat, comb)
        if lut is not None:
            pos = lut[keys]
            if complete:
                if with_elems:
                    base = offsets[sel].astype(np.int32) if len(items) < 2**31 else offsets[sel]
                    yield pos, (base[:, None, None] + comb.astype(base.dtype)[None]).reshape(-1, enc.k)
                else:
                    yield pos
                continue
            hit = pos >= 0
        else:
            pos = np.searchsorted(cand_keys, keys)
            np.minimum(pos, len(cand_keys) - 1, out=pos)
            hit = cand_keys[pos] == keys
        if not with_elems:
            yield pos[hit]
            continue
        base = offsets[sel].astype(np.int32) if len(items) < 2**31 else offsets[sel]
        elems = (base[:, None, None] + comb.astype(base.dtype)[None]).reshape(-1, enc.k)
        yield pos[hit], elems[hit]


def trim(offsets: np.ndarray, items: np.ndarray, enc: Encoder, elems: np.ndarray) -> Transactions:
    """Transaction trimming for the next pass (as in DHP): an item of a
    transaction can be in a (k+1)-candidate contained in it only if it lies
    in at least k of the transaction's large k-itemsets, and a transaction
    needs k+1 such items. ``offsets``/``items`` are pass k's filtered
    transactions, ``elems`` the item positions of its hits on *large*
    candidates. Returns transactions in original item ids."""
    k = enc.k
    c = np.bincount(elems.ravel(), minlength=len(items)) if elems.size else np.zeros(len(items), np.int64)
    keep = c >= k
    tid = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[keep]
    it = items[keep]
    lens = np.bincount(tid, minlength=len(offsets) - 1)
    good = lens >= k + 1
    it = it[good[tid]]
    lens = lens[good]
    offs = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    return Transactions(offs, enc.items[it].astype(np.int32))


def apriori_gen(large: np.ndarray) -> np.ndarray:
    """C_k from L_{k-1} (an (n, k-1) array of sorted rows in lexicographic
    order): join rows sharing their first k-2 items, prune candidates with a
    (k-1)-subset not in L_{k-1}. Rows come out in lexicographic order."""
    n, km1 = large.shape
    k = km1 + 1
    if n < 2:
        return np.empty((0, k), dtype=np.int64)
    large = np.asarray(large, dtype=np.int64)
    if km1 == 1:
        i, j = np.triu_indices(n, 1)
        return np.stack([large[i, 0], large[j, 0]], axis=1)
    pre = large[:, :-1]
    change = np.ones(n, dtype=bool)
    change[1:] = np.any(pre[1:] != pre[:-1], axis=1)
    starts = np.nonzero(change)[0]
    ends = np.append(starts[1:], n)
    parts_a, parts_b = [], []
    for s, e in zip(starts.tolist(), ends.tolist()):
        g = e - s
        if g < 2:
            continue
        i, j = np.triu_indices(g, 1)
        parts_a.append(s + i)
        parts_b.append(s + j)
    if not parts_a:
        return np.empty((0, k), dtype=np.int64)
    a, b = np.concatenate(parts_a), np.concatenate(parts_b)
    cand = np.concatenate([large[a], large[b, -1:]], axis=1)
    if k >= 3:
        enc = Encoder(large.ravel(), km1)
        lkeys = enc.keys(enc.dense(large))  # already sorted: rows are
        keep = np.ones(len(cand), dtype=bool)
        for p in range(k - 2):  # dropping one of the last two gives a parent
            sub = np.delete(cand, p, axis=1)
            sk = enc.keys(enc.dense(sub))
            pos = np.minimum(np.searchsorted(lkeys, sk), len(lkeys) - 1)
            keep &= lkeys[pos] == sk
        cand = cand[keep]
    return cand


@dataclass
class AprioriResult:
    n_transactions: int
    min_count: int
    passes: list[dict] = field(default_factory=list)  # pass, candidates, large, time_s
    levels: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # (rows, counts) per k

    def itemsets(self) -> dict[tuple[int, ...], int]:
        out: dict[tuple[int, ...], int] = {}
        for rows, counts in self.levels:
            for r, c in zip(rows.tolist(), counts.tolist()):
                out[tuple(r)] = c
        return out


def count_pass1(tx: Transactions) -> np.ndarray:
    return np.bincount(tx.items, minlength=0).astype(np.int64)


TRIM_LIMIT = 1 << 25  # keep at most this many hits of a pass for trimming


def count_candidates(tx: Transactions, cand: np.ndarray, min_count: int | None = None) -> tuple[np.ndarray, Transactions | None]:
    """Support counts of the candidate rows (sorted lexicographically), and,
    given ``min_count``, the transactions trimmed for the next pass (None
    when there were more than TRIM_LIMIT hits to remember)."""
    counts = np.zeros(len(cand), dtype=np.int64)
    if not len(cand):
        return counts, None
    enc = Encoder(cand.ravel(), cand.shape[1])
    ckeys = enc.keys(enc.dense(cand))
    offs, items, _ = enc.filter(tx)
    keep_hits = min_count is not None
    hits: list | None = [] if keep_hits else None
    pend: list[np.ndarray] = []
    npend = nh = 0
    for out in candidate_subsets(offs, items, enc, ckeys, with_elems=keep_hits):
        idx = out[0] if keep_hits else out
        pend.append(idx)
        npend += len(idx)
        if npend > MAX_ROWS:  # one bincount per ~MAX_ROWS hits, not per chunk
            counts += np.bincount(np.concatenate(pend), minlength=len(cand))
            pend, npend = [], 0
        if hits is not None:
            nh += len(idx)
            if nh > TRIM_LIMIT:
                hits = None
            else:
                hits.append(out)
    if pend:
        counts += np.bincount(np.concatenate(pend), minlength=len(cand))
    if hits is None:
        return counts, None
    large = counts >= min_count
    ok = [e[large[i]] for i, e in hits]
    elems = np.concatenate(ok) if ok else np.empty((0, enc.k), dtype=np.int64)
    return counts, trim(offs, items, enc, elems)


def apriori(tx: Transactions, min_support: float, max_len: int | None = None) -> AprioriResult:
    """Frequent itemsets of ``tx`` with support >= ``min_support`` (a
    fraction of the transactions), pass by pass."""
    res = AprioriResult(len(tx), min_count(min_support, len(tx)))
    t0 = time.perf_counter()
    c1 = count_pass1(tx)
    large = np.nonzero(c1 >= res.min_count)[0]
    res.levels.append((large.reshape(-1, 1).astype(np.int64), c1[large]))
    res.passes.append({"pass": 1, "candidates": int(np.count_nonzero(c1)), "large": len(large),
                       "time_s": time.perf_counter() - t0})
    work = tx  # trimmed pass after pass
    k = 2
    while len(res.levels[-1][0]) and (max_len is None or k <= max_len):
        t0 = time.perf_counter()
        cand = apriori_gen(res.levels[-1][0])
        if not len(cand):
            break
        counts, trimmed = count_candidates(work, cand, res.min_count)
        keep = counts >= res.min_count
        if trimmed is not None:
            work = trimmed
        res.levels.append((cand[keep], counts[keep]))
        res.passes.append({"pass": k, "candidates": len(cand), "large": int(keep.sum()),
                           "time_s": time.perf_counter() - t0})
        k += 1
    if res.levels and not len(res.levels[-1][0]) and len(res.levels) > 1:
        res.levels.pop()
    return res


@dataclass(frozen=True)
class Rule:
    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    count: int  # transactions containing lhs and rhs
    confidence: float
    support: float


def rules(itemsets: dict[tuple[int, ...], int], n_transactions: int, min_confidence: float) -> list[Rule]:
    """Every rule X -> Y with X ∪ Y frequent, X and Y non-empty and
    disjoint, and count(X ∪ Y) / count(X) >= ``min_confidence``."""
    if not 0 <= min_confidence <= 1:
        raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence}")
    out: list[Rule] = []
    for iset, cnt in itemsets.items():
        k = len(iset)
        if k < 2:
            continue
        for r in range(1, k):
            for lhs in combinations(iset, r):
                conf = cnt / itemsets[lhs]
                if conf >= min_confidence:
                    rhs = tuple(x for x in iset if x not in lhs)
                    out.append(Rule(lhs, rhs, cnt, conf, cnt / n_transactions))
    out.sort(key=lambda r: (-r.confidence, -r.count, r.lhs, r.rhs))
    return out
