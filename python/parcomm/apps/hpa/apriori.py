"""Serial Apriori (Agrawal & Srikant, VLDB '94), vectorized with numpy, and
rule generation.

Pass 1 counts items with ``np.bincount``. Pass k >= 2 builds the candidates
C_k from L_{k-1} (join on the first k-2 items, prune candidates with an
infrequent (k-1)-subset), then counts them without a Python loop per itemset
or per transaction. :func:`apriori` takes two shortcuts where they fit:

* pass 2 (C_2 is every pair of L_1): :func:`count_pairs` turns each
  transaction's pairs of L_1 items into keys i*m + j of a dense m*m table and
  counts them with one ``np.bincount`` (no candidate lookup);
* passes k >= 3, while |C_k| times the bitmap length is small
  (``BITMAP_WORDS``): :class:`Bitmaps`, one bit per transaction for each item
  and for each large (k-1)-itemset; a candidate's bitmap is its (k-1)-prefix's
  AND its last item's, its count a popcount (``np.bitwise_count``).

Otherwise (and in HPA, which must form and send every subset) the general
horizontal counting:

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations

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
        self.int_keys = self.m**k < self.KEY_LIMIT if self.m else True
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
            sel = idx[s : s + per]
            yield items[offsets[sel][:, None] + cols], sel, comb


def n_subsets(offsets: np.ndarray, k: int) -> int:
    """Number of k-subsets of the transactions (CSR offsets)."""
    ls, cnt = np.unique(np.diff(offsets), return_counts=True)
    return sum(math.comb(int(l), k) * int(c) for l, c in zip(ls, cnt))


def use_table(enc: Encoder, n_keys: int, n_queries: int) -> bool:
    """Whether ``n_queries`` lookups among ``n_keys`` keys use a direct table
    (key -> index, one gather each) rather than binary search (log2 n_keys
    steps each): while the key space is at most LUT_LIMIT and filling it
    costs less than the searches would."""
    if not enc.int_keys:
        return False
    size = enc.m**enc.k
    return size <= LUT_LIMIT and size <= 4 * n_queries * max(1.0, math.log2(n_keys + 1))


def candidate_subsets(
    offsets: np.ndarray,
    items: np.ndarray,
    enc: Encoder,
    cand_keys: np.ndarray,
    max_rows: int = MAX_ROWS,
    with_elems: bool | str = False,
) -> Iterator:
    """For each chunk, the indices (into the sorted candidates) of the
    k-subsets of the transactions (CSR of dense ids, from
    :meth:`Encoder.filter`) that are candidates, with repetition. With
    ``with_elems``: pairs ``(indices, elems)``, ``elems`` the (n, k)
    positions in ``items`` of each hit's items (for :func:`trim`); with
    ``with_elems="lazy"``, ``elems`` is a small description from which
    :func:`hit_elems` forms the positions of selected hits only."""
    if not len(cand_keys):
        return
    lut = None
    if use_table(enc, len(cand_keys), n_subsets(offsets, enc.k)):  # direct table: key -> candidate index or -1
        lut = np.full(enc.m**enc.k, -1, dtype=np.int32)
        lut[cand_keys] = np.arange(len(cand_keys), dtype=np.int32)
    # every k-subset is a candidate (pass 2: C_2 is all pairs of L_1, and the
    # transactions hold only L_1 items): no need to test for hits
    complete = len(cand_keys) == math.comb(enc.m, enc.k)
    for mat, sel, comb in subsets(offsets, items, enc.k, max_rows):
        keys = enc.subset_keys(mat, comb)
        if lut is not None:
            pos = lut[keys]
            if complete:
                if with_elems == "lazy":
                    yield pos, (None, offsets[sel], comb)
                elif with_elems:
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
        if with_elems == "lazy":
            yield pos[hit], (np.flatnonzero(hit), offsets[sel], comb)
            continue
        base = offsets[sel].astype(np.int32) if len(items) < 2**31 else offsets[sel]
        elems = (base[:, None, None] + comb.astype(base.dtype)[None]).reshape(-1, enc.k)
        yield pos[hit], elems[hit]


def hit_elems(lazy: tuple, keep: np.ndarray) -> np.ndarray:
    """The (n, k) item positions of the hits selected by the boolean mask
    ``keep``, from the description :func:`candidate_subsets` yields with
    ``with_elems="lazy"`` (flat subset numbers of the hits or None for all,
    the transactions' offsets, the position combinations)."""
    flat, base, comb = lazy
    sel = np.flatnonzero(keep)
    if flat is not None:
        sel = flat[sel]
    row, col = np.divmod(sel, len(comb))
    return base[row][:, None] + comb[col]


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
    # row r joins with every later row of its group: r+1 .. end(r)-1
    gid = np.cumsum(change) - 1
    ends = np.append(np.nonzero(change)[0][1:], n)[gid]
    partners = ends - np.arange(n) - 1
    total = int(partners.sum())
    if not total:
        return np.empty((0, k), dtype=np.int64)
    a = np.repeat(np.arange(n), partners)
    first = np.cumsum(partners) - partners  # where row a's pairs start
    b = a + 1 + (np.arange(total) - first[a])
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


def count_candidates(
    tx: Transactions, cand: np.ndarray, min_count: int | None = None
) -> tuple[np.ndarray, Transactions | None]:
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
    for out in candidate_subsets(offs, items, enc, ckeys, with_elems="lazy" if keep_hits else False):
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
    ok = [hit_elems(e, large[i]) for i, e in hits]
    elems = np.concatenate(ok) if ok else np.empty((0, enc.k), dtype=np.int64)
    return counts, trim(offs, items, enc, elems)


PAIR_LIMIT = 1 << 22  # pass 2 counts every pair in a dense m*m table while m*m stays below this
BITMAP_WORDS = 1 << 24  # passes k >= 3 use TID bitmaps while (|C_k| + items) * words per bitmap stays below this
BITMAP_CHUNK = 1 << 22  # words of candidate bitmaps formed at once
BITMAP_BUILD = 1 << 26  # bytes of the boolean item x transaction matrix formed at once


def count_pairs(tx: Transactions, items1: np.ndarray) -> np.ndarray | None:
    """Pass 2 without candidate lookup: the counts of every pair of the
    sorted items ``items1`` (L_1), in :func:`apriori_gen`'s order (row-major
    upper triangle). Each transaction's pairs of L_1 items become the keys
    i*m + j of a dense m*m table, counted with ``np.bincount``. None when
    m*m exceeds PAIR_LIMIT."""
    m = len(items1)
    if m < 2 or m * m > PAIR_LIMIT:
        return None
    enc = Encoder(items1, 2)
    offs, items, _ = enc.filter(tx)
    table = np.zeros(m * m, dtype=np.int64)
    pend: list[np.ndarray] = []
    npend = 0
    for mat, _sel, comb in subsets(offs, items, 2):
        key = mat[:, comb[:, 0]] * np.int32(m)
        key += mat[:, comb[:, 1]]
        pend.append(key.ravel())
        npend += key.size
        if npend > 4 * MAX_ROWS:
            table += np.bincount(np.concatenate(pend), minlength=m * m)
            pend, npend = [], 0
    if pend:
        table += np.bincount(np.concatenate(pend), minlength=m * m)
    i, j = np.triu_indices(m, 1)
    return table[i * m + j]


class Bitmaps:
    """Vertical layout for passes k >= 3: one bit per transaction for each
    item (``item_bm``, rows in the order of ``items``), and the bitmaps of
    the last pass's large itemsets, so a candidate's bitmap is its prefix's
    AND its last item's, and its count a popcount. Built from the
    transactions with at least ``k`` of ``items`` (the only ones that can
    hold a k-candidate or a larger one)."""

    def __init__(self, tx: Transactions, items: np.ndarray, k: int):
        self.items = np.unique(np.asarray(items, dtype=np.int64))
        lut = np.full(max(int(self.items[-1]), int(tx.items.max()) if len(tx.items) else 0) + 1, -1, np.int64)
        lut[self.items] = np.arange(len(self.items))
        d = lut[tx.items]
        keep = d >= 0
        tid = np.repeat(np.arange(len(tx), dtype=np.int64), tx.lengths)[keep]
        d = d[keep]
        ok = np.bincount(tid, minlength=len(tx)) >= k
        keep2 = ok[tid]
        tid, d = tid[keep2], d[keep2]
        new_id = np.cumsum(ok) - 1  # renumber the kept transactions densely
        tid = new_id[tid]
        n = int(ok.sum())
        self.words = max(1, (n + 63) // 64)
        width = self.words * 64
        m = len(self.items)
        self.item_bm = np.empty((m, self.words), dtype=np.uint64)
        # a dense boolean (items, transactions) matrix, some items at a time, packed to bits
        step = max(1, BITMAP_BUILD // width)
        if step < m:  # several slices: group the pairs by item
            order = np.argsort(d, kind="stable")
            d, tid = d[order], tid[order]
            bounds = np.searchsorted(d, np.arange(m + 1))
        else:
            bounds = np.array([0, len(d)])
        for s in range(0, m, step):
            e = min(m, s + step)
            dense = np.zeros((e - s) * width, dtype=bool)
            lo, hi = (bounds[s], bounds[e]) if step < m else (0, len(d))
            dense[(d[lo:hi] - s) * width + tid[lo:hi]] = True
            packed = np.packbits(dense.reshape(e - s, width), axis=1, bitorder="little")
            self.item_bm[s:e] = packed.view(np.uint64)
        self.prev: np.ndarray | None = None  # bitmaps of L_{k-1}, rows as in the level
        self.prev_rows: np.ndarray | None = None

    def rows_bitmaps(self, rows: np.ndarray) -> np.ndarray:
        """Bitmaps of itemsets (rows of item ids): the AND of their items'."""
        col = np.searchsorted(self.items, rows)
        out = self.item_bm[col[:, 0]].copy()
        for j in range(1, rows.shape[1]):
            out &= self.item_bm[col[:, j]]
        return out

    def count(self, large: np.ndarray, cand: np.ndarray, min_count: int) -> np.ndarray:
        """Counts of ``cand`` (from :func:`apriori_gen` on ``large``, both
        lexicographically sorted); remembers the large candidates' bitmaps."""
        if self.prev is None or self.prev_rows is not large:
            self.prev = self.rows_bitmaps(large)
        k = cand.shape[1]
        enc = Encoder(large.ravel(), k - 1)
        lkeys = enc.keys(enc.dense(large))
        pk = enc.keys(enc.dense(cand[:, :-1]))
        parent = np.searchsorted(lkeys, pk)
        last = np.searchsorted(self.items, cand[:, -1])
        counts = np.empty(len(cand), dtype=np.int64)
        keep_bm = []
        step = max(1, BITMAP_CHUNK // self.words)
        for s in range(0, len(cand), step):
            bm = self.prev[parent[s : s + step]]
            bm &= self.item_bm[last[s : s + step]]
            c = np.bitwise_count(bm).sum(axis=1, dtype=np.int64)
            counts[s : s + step] = c
            keep_bm.append(bm[c >= min_count])
        self.prev = np.concatenate(keep_bm) if keep_bm else np.empty((0, self.words), np.uint64)
        return counts


def _bitmap_words(bitmaps: Bitmaps | None, large: np.ndarray, cand: np.ndarray, work: Transactions) -> int:
    """Bound on the 64-bit words the bitmap counting of ``cand`` holds: the
    items' bitmaps and the candidates' (and large itemsets') ones."""
    items = len(bitmaps.items) if bitmaps is not None else len(np.unique(large))
    words = bitmaps.words if bitmaps is not None else (len(work) + 63) // 64
    return (items + len(cand)) * words


def apriori(tx: Transactions, min_support: float, max_len: int | None = None) -> AprioriResult:
    """Frequent itemsets of ``tx`` with support >= ``min_support`` (a
    fraction of the transactions), pass by pass."""
    res = AprioriResult(len(tx), min_count(min_support, len(tx)))
    t0 = time.perf_counter()
    c1 = count_pass1(tx)
    large = np.nonzero(c1 >= res.min_count)[0]
    res.levels.append((large.reshape(-1, 1).astype(np.int64), c1[large]))
    res.passes.append(
        {"pass": 1, "candidates": int(np.count_nonzero(c1)), "large": len(large), "time_s": time.perf_counter() - t0}
    )
    work = tx  # trimmed by the passes counted horizontally
    bitmaps: Bitmaps | None = None
    k = 2
    while len(res.levels[-1][0]) and (max_len is None or k <= max_len):
        t0 = time.perf_counter()
        cand = apriori_gen(res.levels[-1][0])
        if not len(cand):
            break
        counts = None
        if k == 2:
            counts = count_pairs(work, res.levels[-1][0][:, 0])
        elif hasattr(np, "bitwise_count") and _bitmap_words(bitmaps, res.levels[-1][0], cand, work) <= BITMAP_WORDS:
            if bitmaps is None:
                bitmaps = Bitmaps(work, res.levels[-1][0].ravel(), k)
            counts = bitmaps.count(res.levels[-1][0], cand, res.min_count)
        else:
            bitmaps = None
        if counts is None:
            counts, trimmed = count_candidates(work, cand, res.min_count)
            if trimmed is not None:
                work = trimmed
        keep = counts >= res.min_count
        res.levels.append((cand[keep], counts[keep]))
        if bitmaps is not None:
            bitmaps.prev_rows = res.levels[-1][0]
        res.passes.append(
            {"pass": k, "candidates": len(cand), "large": int(keep.sum()), "time_s": time.perf_counter() - t0}
        )
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
