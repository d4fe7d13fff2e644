"""Transactions: the IBM Quest synthetic generator and two file formats.

The generator follows the description in Agrawal & Srikant, "Fast Algorithms
for Mining Association Rules", VLDB '94, §2.4.3 (written here from that text):

* ``L`` potentially large itemsets ("patterns") over ``N`` items. A pattern's
  size is Poisson with mean ``I``. The first pattern's items are random; each
  later pattern takes a fraction of its items from the previous pattern, the
  fraction exponentially distributed with mean ``correlation`` (0.5 in the
  paper), and the rest at random.
* Each pattern has a weight, exponentially distributed with mean 1, normalised
  so the weights sum to 1: the probability that the pattern is picked.
* Each pattern has a corruption level, normal with mean ``corruption`` (0.5)
  and variance 0.1, clipped to [0, 1]: when the pattern is put into a
  transaction, items are dropped from it while a uniform draw is below it.
* A transaction's size is Poisson with mean ``T``. Patterns are added until
  the size is reached; a pattern that does not fit is put in anyway half of
  the time, and otherwise kept for the next transaction.

Sizes are drawn as ``1 + Poisson(mean - 1)`` so that no transaction or
pattern is empty and the means are exactly ``T`` and ``I``. Randomness comes
from one numpy generator for the patterns and one per chunk of
``CHUNK`` transactions (seeded by ``(seed, chunk)``), so the output depends
only on the parameters and the seed, never on how it is partitioned; a
pattern left over at the end of a chunk is dropped.

The files are defined by that random stream, draw for draw, so the
implementation may change only in ways that consume it identically:
``_gen_chunk`` runs the per-pattern decisions in a lean loop over Python
floats and reproduces numpy's ``Generator.permutation`` in bulk (checked
against numpy at first use, with numpy itself as the fallback);
tests/test_quest_speed_identical.py pins file digests recorded before that
change, and benchmarks/quest_speed.py keeps the original loop as a baseline.

Two formats:

* **binary** (``.qtx``, format 2): a header and its JSON metadata followed by
  their CRC-32, then chunks ``(part, first, ntx, nitems)`` + transaction
  lengths (uint16) + items (uint16 when N <= 65536, else uint32) + the CRC-32
  of the chunk. Transactions are split into ``P`` contiguous partitions; a
  chunk never straddles two, so rank ``r`` reads only its own chunks. Reading
  checks every chunk it reads (checksum, item ids below N, items strictly
  increasing within a transaction, lengths adding up) and the chunk headers it
  skips (in order, covering 0..D-1, inside their partition): a corrupted file is
  an error naming the file and the chunk, never mined. Format 1 files (no
  checksums) are refused with a hint to regenerate them.
* **text**: one transaction per line, integer item ids separated by blanks
  (commas are accepted too); blank lines and ``#`` comments are skipped.
"""

from __future__ import annotations

import io
import json
import math
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np

from ... import lifetime

MAGIC = b"PCQTX2\0\0"
_MAGIC_V1 = b"PCQTX1\0\0"
CHUNK = 8192
_HEADER = struct.Struct("<8sQIIBI")  # magic, D, N, P, itemsize, json length
_CHUNK_HDR = struct.Struct("<IQIQ")  # part, first transaction, ntx, nitems
_CRC = struct.Struct("<I")  # zlib.crc32 of the header + metadata, or of a chunk
# Bounds on what a file may claim (its header is read before anything is allocated):
#: Item ids index dense count arrays (pass 1 counts with one bincount): 2**24 ids is
#: 128 MiB of counters, far above Quest's N (1,000 to 100,000) and real catalogues.
MAX_ITEMS = 1 << 24
MAX_TRANSACTIONS = 1 << 40
MAX_PARTS = 1 << 16
MAX_TRANSACTION_LEN = 65535  # lengths are stored as uint16
#: T and I: a transaction is about T items plus at most one pattern that overflows it, so with
#: both at most 16,384 its length stays far below 65,535 (the Poisson tail is ~128 wide there).
MAX_AVG_LEN = 16_384
#: L (the paper's is 2,000) and L x I: patterns are made one item at a time in Python (about
#: 5 s per million pattern items here), so these bound the set-up to seconds.
MAX_PATTERNS = 1 << 16
MAX_PATTERN_ITEMS = 1 << 20
_MAX_META = 1 << 16


class TransactionFileError(ValueError):
    """A transactions file that cannot be read; the message names the line or field."""


@dataclass(frozen=True)
class Transactions:
    """Transactions in CSR form: transaction ``i`` is
    ``items[offsets[i]:offsets[i+1]]``, sorted, without duplicates."""

    offsets: np.ndarray  # int64, length n + 1
    items: np.ndarray  # int32

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.items[self.offsets[i] : self.offsets[i + 1]]

    def to_lists(self) -> list[list[int]]:
        return [self[i].tolist() for i in range(len(self))]

    @staticmethod
    def from_lists(rows) -> Transactions:
        rows = [list(r) for r in rows]
        lens = np.array([len(r) for r in rows], dtype=np.int64)
        flat = np.fromiter((x for r in rows for x in r), dtype=np.int64, count=int(lens.sum()))
        return normalize(lens, flat)

    def slice(self, start: int, stop: int) -> Transactions:
        o = self.offsets[start : stop + 1]
        return Transactions(o - o[0], self.items[o[0] : o[-1]])


def normalize(lengths: np.ndarray, flat: np.ndarray) -> Transactions:
    """CSR from per-transaction lengths and concatenated items: items sorted
    within each transaction, duplicates removed."""
    lengths = np.asarray(lengths, dtype=np.int64)
    flat = np.asarray(flat, dtype=np.int64)
    tid = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    order = np.lexsort((flat, tid))
    tid, flat = tid[order], flat[order]
    keep = np.ones(len(flat), dtype=bool)
    keep[1:] = (tid[1:] != tid[:-1]) | (flat[1:] != flat[:-1])
    tid, flat = tid[keep], flat[keep]
    counts = np.bincount(tid, minlength=len(lengths))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Transactions(offsets, flat.astype(np.int32))


@dataclass(frozen=True)
class QuestParams:
    transactions: int = 10_000  # D
    avg_len: float = 10.0  # T
    avg_pattern_len: float = 4.0  # I
    items: int = 1000  # N
    patterns: int = 2000  # L
    correlation: float = 0.5
    corruption: float = 0.5
    seed: int = 1

    def check(self) -> None:
        if not 0 <= self.transactions <= MAX_TRANSACTIONS:
            raise ValueError(f"transactions must be in 0..{MAX_TRANSACTIONS}, got {self.transactions}")
        if not 1 <= self.items <= MAX_ITEMS:
            raise ValueError(f"items must be in 1..{MAX_ITEMS}, got {self.items}")
        if not 1 <= self.patterns <= MAX_PATTERNS:
            raise ValueError(f"patterns must be in 1..{MAX_PATTERNS}, got {self.patterns}")
        # Lengths are stored in 16 bits (a transaction also holds at most ``items`` distinct items).
        if not 1 <= self.avg_len <= MAX_AVG_LEN:
            raise ValueError(f"avg_len (T) must be in [1, {MAX_AVG_LEN}], got {self.avg_len}")
        if not 1 <= self.avg_pattern_len <= min(self.items, MAX_AVG_LEN):
            raise ValueError(
                f"avg_pattern_len (I) must be in [1, {min(self.items, MAX_AVG_LEN)}] (at most items and "
                f"{MAX_AVG_LEN}), got {self.avg_pattern_len}"
            )
        if self.patterns * self.avg_pattern_len > MAX_PATTERN_ITEMS:
            raise ValueError(
                f"patterns x avg_pattern_len (L x I) = {self.patterns * self.avg_pattern_len:g} is above "
                f"the limit of {MAX_PATTERN_ITEMS} pattern items"
            )
        if not 0 <= self.correlation <= 1:
            raise ValueError(f"correlation must be in [0, 1], got {self.correlation}")
        if not 0 <= self.corruption <= 1:
            raise ValueError(f"corruption must be in [0, 1], got {self.corruption}")


@dataclass
class Patterns:
    items: list[np.ndarray]
    weights: np.ndarray  # sums to 1
    corruption: np.ndarray


def make_patterns(p: QuestParams) -> Patterns:
    rng = np.random.default_rng([p.seed, 0x5155_4553])  # "QUES"
    items: list[np.ndarray] = []
    prev: np.ndarray | None = None
    for _ in range(p.patterns):
        size = min(p.items, 1 + int(rng.poisson(p.avg_pattern_len - 1)))
        chosen: list[int] = []
        if prev is not None and len(prev):
            frac = min(1.0, rng.exponential(p.correlation)) if p.correlation > 0 else 0.0
            ntake = min(len(prev), size, int(round(frac * size)))
            if ntake:
                chosen = rng.choice(prev, size=ntake, replace=False).tolist()
        have = set(chosen)
        while len(chosen) < size:
            x = int(rng.integers(p.items))
            if x not in have:
                have.add(x)
                chosen.append(x)
        arr = np.array(sorted(chosen), dtype=np.int32)
        items.append(arr)
        prev = arr
    w = rng.exponential(1.0, size=p.patterns)
    w /= w.sum()
    c = np.clip(rng.normal(p.corruption, math.sqrt(0.1), size=p.patterns), 0.0, 1.0)
    return Patterns(items, w, c)


def _prepare(pats: Patterns) -> tuple[np.ndarray, np.ndarray, list[int], list[float]]:
    """The patterns as CSR (offsets, items) plus their lengths and corruption
    levels as Python lists, for :func:`_gen_chunk`."""
    lens = np.fromiter((len(a) for a in pats.items), dtype=np.int64, count=len(pats.items))
    if len(lens) and lens.min() < 1:  # make_patterns never makes one; _gen_chunk assumes it
        raise ValueError("a Quest pattern is empty")
    off = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    items = np.concatenate(pats.items).astype(np.int64) if len(pats.items) else np.empty(0, np.int64)
    return off, items, lens.tolist(), np.asarray(pats.corruption, dtype=np.float64).tolist()


# --- numpy's Generator.permutation(k), reproduced in bulk -------------------
#
# For an integer k, Generator.permutation(k) is np.arange(k) shuffled by
# Fisher-Yates: for i = k-1 .. 1, j = random_interval(i), swap a[i], a[j].
# random_interval(i) draws 32-bit values (next_uint32: the low half of a
# 64-bit PCG64 output, keeping the high half for the next call) masked to the
# smallest all-ones mask >= i until one is <= i. _permutations() does the same
# on raw 64-bit outputs for a whole batch of permutations, then leaves the bit
# generator in exactly the state the sequence of permutation() calls would.
# _emulation_ok() checks this against numpy once per process; if numpy ever
# differs, the generator falls back to calling rng.permutation one by one.


def _permutations_numpy(rng: np.random.Generator, ks: list[int]) -> np.ndarray:
    return np.concatenate([rng.permutation(k) for k in ks]).astype(np.int64)


def _permutations_emulated(rng: np.random.Generator, ks: list[int]) -> np.ndarray:
    bg = rng.bit_generator
    k = np.asarray(ks, dtype=np.int64)
    s_count = len(k)
    off = np.zeros(s_count + 1, dtype=np.int64)
    np.cumsum(k, out=off[1:])
    perm = np.arange(int(off[-1]), dtype=np.int64) - np.repeat(off[:-1], k)
    nc = np.maximum(k - 1, 0)  # random_interval calls per permutation
    ncalls = int(nc.sum())
    if ncalls == 0:
        return perm
    cstart = np.cumsum(nc) - nc
    # call c of permutation s (c = cstart[s] .. cstart[s] + k - 2) has i = k - 1 - (c - cstart[s])
    imax = np.repeat(k - 1 + cstart, nc) - np.arange(ncalls, dtype=np.int64)
    vals = _random_intervals(bg, imax, int(k.max()))
    _shuffle(perm, k, off, cstart, vals)
    return perm


def _halves(raw: np.ndarray) -> np.ndarray:
    """64-bit outputs as the 32-bit values next_uint32 hands out: low half first."""
    v = np.empty(2 * len(raw), dtype=np.uint64)
    v[0::2] = raw & np.uint64(0xFFFFFFFF)
    v[1::2] = raw >> np.uint64(32)
    return v


def _random_intervals(bg: np.random.BitGenerator, imax: np.ndarray, kmax: int) -> np.ndarray:
    """``random_interval(i)`` for each ``i`` of ``imax`` in order, leaving ``bg`` as those calls would."""
    ncalls = len(imax)
    masks = np.arange(kmax, dtype=np.int64)  # smallest all-ones mask >= i, by table
    for sh in (1, 2, 4, 8, 16, 32):
        masks |= masks >> sh
    mask = masks[imax]
    st = bg.state
    h0 = int(st["has_uint32"])
    v32 = _halves(bg.random_raw(ncalls + 64))
    if h0:
        v32 = np.concatenate([np.array([st["uinteger"]], dtype=np.uint64), v32])
    # Only calls whose mask exceeds i can reject; call c takes the value at
    # c + r, r the number of rejections so far.
    rej = np.nonzero((masks != np.arange(kmax))[imax])[0]
    offs, v32 = _rejections(bg, v32, rej, imax, mask)
    pos = np.arange(ncalls, dtype=np.int64) + offs
    vals = (v32[pos] & mask.astype(np.uint64)).astype(np.int64)
    bg.state = st
    _consume(bg, int(pos[-1]) + 1 - h0, v32, h0)
    return vals


def _rejections(
    bg: np.random.BitGenerator, v32: np.ndarray, rej: np.ndarray, imax: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each call, how many values earlier calls rejected (the offset of its value in ``v32``),
    and ``v32`` extended if the rejections ran past the values drawn."""
    ncalls = len(imax)
    offs = np.zeros(ncalls, dtype=np.int64)
    if not len(rej):
        return offs, v32
    vl = v32.tolist()
    limit = len(vl)
    r = 0
    ev_c: list[int] = []  # calls that rejected, and r after them
    ev_r: list[int] = []
    for c, i, m in zip(rej.tolist(), imax[rej].tolist(), mask[rej].tolist()):
        if (vl[c + r] & m) > i:
            r += 1
            while True:
                if ncalls + r >= limit:  # ran out of drawn values (very unlikely)
                    ext = _halves(bg.random_raw(ncalls + 64))
                    v32 = np.concatenate([v32, ext])
                    vl.extend(ext.tolist())
                    limit = len(vl)
                if (vl[c + r] & m) <= i:
                    break
                r += 1
            ev_c.append(c)
            ev_r.append(r)
    if ev_c:
        offs[ev_c] = ev_r
        np.maximum.accumulate(offs, out=offs)
    return offs, v32


def _consume(bg: np.random.BitGenerator, used: int, v32: np.ndarray, h0: int) -> None:
    """Put ``bg`` (back at its state before the draws) in the state after consuming ``used``
    32-bit values beyond the buffered half (``h0``: there was one)."""
    if used <= 0:
        st2 = bg.state
        st2["has_uint32"] = 0
    else:
        words = (used + 1) // 2
        bg.random_raw(words)
        st2 = bg.state
        if used % 2:
            st2["has_uint32"] = 1
            st2["uinteger"] = int(v32[h0 + 2 * words - 1])
        else:
            st2["has_uint32"] = 0
    bg.state = st2


def _shuffle(perm: np.ndarray, k: np.ndarray, off: np.ndarray, cstart: np.ndarray, vals: np.ndarray) -> None:
    """Fisher-Yates level by level (i from high to low); permutations are
    independent, so each level is one vectorised swap over those with k > i."""
    order = np.argsort(-k, kind="stable")
    ksorted = k[order]
    for i in range(int(ksorted[0]) - 1, 0, -1):
        rows = order[: int(np.searchsorted(-ksorted, -i, side="left"))]
        j = vals[cstart[rows] + (k[rows] - 1 - i)]
        a = off[rows] + i
        b = off[rows] + j
        tmp = perm[a]
        perm[a] = perm[b]
        perm[b] = tmp


_EMULATION_OK: bool | None = None


def _emulation_ok() -> bool:
    global _EMULATION_OK
    if _EMULATION_OK is None:
        ok = True
        try:
            for trial in range(24):
                meta = np.random.default_rng([trial, 0x5045524D])
                ks = meta.integers(1, (3, 9, 40)[trial % 3], size=int(meta.integers(1, 30))).tolist()
                a = np.random.default_rng([trial, 1])
                b = np.random.default_rng([trial, 1])
                for g in (a, b):  # start with and without a buffered 32-bit half
                    g.permutation(2 + trial % 2)
                    g.random(3)
                want = np.concatenate([a.permutation(k) for k in ks])
                got = _permutations_emulated(b, ks)
                if (
                    not np.array_equal(want, got)
                    or not np.array_equal(a.random(4), b.random(4))
                    or not np.array_equal(a.permutation(5), b.permutation(5))
                ):
                    ok = False
                    break
        except Exception:  # pragma: no cover - unexpected numpy internals
            ok = False
        _EMULATION_OK = ok
    return _EMULATION_OK


def _permutations(rng: np.random.Generator, ks: list[int]) -> np.ndarray:
    """``np.concatenate([rng.permutation(k) for k in ks])``, leaving ``rng``
    in the same state, but without a Python call per permutation."""
    if _emulation_ok() and isinstance(rng.bit_generator, np.random.PCG64):
        return _permutations_emulated(rng, ks)
    return _permutations_numpy(rng, ks)


def _gen_chunk(
    p: QuestParams, pats: Patterns, cum: np.ndarray, chunk: int, n: int, prep: tuple | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Lengths and concatenated (sorted, unique) items of ``n`` transactions.

    Consumes the chunk's random stream exactly as the straightforward loop
    would (sizes; a batch of uniforms for picking patterns; a batch of
    uniforms for corruption and the fit coin; refills of either batch when
    exhausted; a permutation for each corrupted pattern), but in three steps:
    a lean pass over Python floats decides which patterns go where and how
    many of their items survive (this depends only on the uniforms and the
    pattern lengths, not on which items a permutation keeps); the
    permutations are drawn in bulk, in order, just before each refill so the
    refilled uniforms are the same; then all items are gathered, sorted and
    deduplicated with a few array operations.
    """
    pat_off, pat_items, plen, corr = prep if prep is not None else _prepare(pats)
    rng = np.random.default_rng([p.seed, chunk])
    sizes = (1 + rng.poisson(p.avg_len - 1, size=n)).tolist()
    draws = _ChunkDraws(rng, cum, n, plen)
    occ, tx_end = _fill_transactions(draws, sizes, plen, corr)
    src, start, m_arr = _occurrence_items(occ, draws, pat_off, pat_items, plen)
    base = int(pat_items.max()) + 1 if len(pat_items) else 1
    return _sorted_unique_per_transaction(n, src, start, m_arr, tx_end, base)


class _ChunkDraws:
    """A chunk's random stream after the sizes: pattern picks and uniforms in batches, and one
    permutation per corrupted pattern, drawn in bulk just before a refill (the permutations come
    first, so the refilled batch is the one the straightforward loop would draw)."""

    def __init__(self, rng: np.random.Generator, cum: np.ndarray, n: int, plen: list[int]) -> None:
        self.rng, self.cum, self.last, self.plen = rng, cum, len(cum) - 1, plen
        self.npick = 4 * n + 16
        self.nu = 16 * n + 64
        self.pick = self._picks()
        self.uni: list[float] = rng.random(self.nu).tolist()
        # One permutation per corrupted pattern, in draw order: the pattern and
        # how many of its items are kept (the first m of the permutation).
        self.perm_j: list[int] = []
        self.perm_m: list[int] = []
        self.perm_blocks: list[np.ndarray] = []
        self.drawn = 0

    def _picks(self) -> list[int]:
        buf = self.rng.random(self.npick)
        return np.minimum(np.searchsorted(self.cum, buf, side="right"), self.last).tolist()

    def draw_pending(self) -> None:
        if self.drawn < len(self.perm_j):
            self.perm_blocks.append(_permutations(self.rng, [self.plen[j] for j in self.perm_j[self.drawn :]]))
            self.drawn = len(self.perm_j)

    def refill_picks(self) -> list[int]:
        self.draw_pending()
        return self._picks()

    def refill_uniforms(self) -> list[float]:
        self.draw_pending()
        return self.rng.random(self.nu).tolist()


def _fill_transactions(
    draws: _ChunkDraws, sizes: list[int], plen: list[int], corr: list[float]
) -> tuple[list[int], list[int]]:
    """The lean pass: which patterns go into which transaction, and how many of their items.

    Returns the patterns put into transactions, ``j >= 0`` for pattern j whole and ``-1 - s`` for
    the corrupted pattern of permutation s, and ``tx_end[t]``, the end of transaction t among them.
    """
    pick, uni = draws.pick, draws.uni
    perm_j, perm_m = draws.perm_j, draws.perm_m
    occ: list[int] = []
    tx_end: list[int] = []
    pending = None
    ip = iu = 0
    for target in sizes:
        have = 0
        if pending is not None:  # the carried-over pattern always fits first
            occ.append(pending[0])
            have = pending[1]
            pending = None
        while have < target:
            try:
                j = pick[ip]
            except IndexError:
                pick, ip = draws.refill_picks(), 0
                j = pick[0]
            ip += 1
            k = plen[j]
            c = corr[j]
            # drop items while a uniform draw is below the corruption level
            drop = 0
            while drop < k:
                try:
                    u = uni[iu]
                except IndexError:
                    uni, iu = draws.refill_uniforms(), 0
                    u = uni[0]
                iu += 1
                if u >= c:
                    break
                drop += 1
            if drop:
                code = -1 - len(perm_j)
                perm_j.append(j)
                k -= drop
                perm_m.append(k)
                if not k:
                    continue
            else:
                code = j
            if have + k > target and have > 0:
                try:
                    u = uni[iu]
                except IndexError:
                    uni, iu = draws.refill_uniforms(), 0
                    u = uni[0]
                iu += 1
                if u >= 0.5:
                    pending = (code, k)
                    break
            occ.append(code)
            have += k
        tx_end.append(len(occ))
    draws.draw_pending()
    return occ, tx_end


def _occurrence_items(
    occ: list[int], draws: _ChunkDraws, pat_off: np.ndarray, pat_items: np.ndarray, plen: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each occurrence's kept items are: ``src[start:start + m]``, the whole pattern or the
    first m entries of its permutation (each permutation's items follow the patterns in ``src``)."""
    code = np.array(occ, dtype=np.int64)
    cor = code < 0
    whole = ~cor
    np_plen = np.asarray(plen, dtype=np.int64)
    start = np.empty(len(code), dtype=np.int64)  # where the occurrence's items start in src
    m_arr = np.empty(len(code), dtype=np.int64)
    start[whole] = pat_off[code[whole]]
    m_arr[whole] = np_plen[code[whole]]
    src = pat_items
    if draws.perm_j:
        pj = np.array(draws.perm_j, dtype=np.int64)
        pk = np_plen[pj]
        poff = np.cumsum(pk) - pk
        # each permutation's pattern items in permuted order, after the patterns
        perm_items = pat_items[np.repeat(pat_off[pj], pk) + np.concatenate(draws.perm_blocks)]
        src = np.concatenate([pat_items, perm_items])
        s_idx = -1 - code[cor]
        start[cor] = len(pat_items) + poff[s_idx]
        m_arr[cor] = np.array(draws.perm_m, dtype=np.int64)[s_idx]
    return src, start, m_arr


def _sorted_unique_per_transaction(
    n: int, src: np.ndarray, start: np.ndarray, m_arr: np.ndarray, tx_end: list[int], base: int
) -> tuple[np.ndarray, np.ndarray]:
    """Gather the occurrences' items, then sort and deduplicate them within each transaction
    (one sort of ``transaction * base + item`` keys); ``base`` exceeds every item id."""
    cm = np.cumsum(m_arr)
    total = int(cm[-1]) if len(cm) else 0
    idx = np.repeat(start - (cm - m_arr), m_arr) + np.arange(total, dtype=np.int64)
    # items per transaction (before deduplication), from the occurrence bounds
    per_tx = np.diff(np.concatenate(([0], cm))[np.array([0] + tx_end, dtype=np.int64)])
    key = np.repeat(np.arange(n, dtype=np.int64) * base, per_tx) + src[idx]
    key.sort()
    if total:
        uniq = np.empty(total, dtype=bool)
        uniq[0] = True
        np.not_equal(key[1:], key[:-1], out=uniq[1:])
        key = key[uniq]
    tid = key // base
    out_lens = np.bincount(tid, minlength=n).astype(np.int64)
    flat = (key - tid * base).astype(np.int32)
    return out_lens, flat


def generate(p: QuestParams) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(first transaction index, lengths, items)`` chunk by chunk."""
    p.check()
    pats = make_patterns(p)
    cum = np.cumsum(pats.weights)
    prep = _prepare(pats)
    for chunk in range((p.transactions + CHUNK - 1) // CHUNK):
        first = chunk * CHUNK
        n = min(CHUNK, p.transactions - first)
        lens, flat = _gen_chunk(p, pats, cum, chunk, n, prep)
        yield first, lens, flat


def generate_transactions(p: QuestParams) -> Transactions:
    """The whole data set in memory (small data sets, tests)."""
    lens, flats = [], []
    for _, l, f in generate(p):
        lens.append(l)
        flats.append(f)
    lengths = np.concatenate(lens) if lens else np.empty(0, np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    items = np.concatenate(flats).astype(np.int32) if flats else np.empty(0, np.int32)
    return Transactions(offsets, items)


def part_bounds(d: int, parts: int, r: int) -> tuple[int, int]:
    """Transactions [start, stop) of partition ``r`` of ``parts`` (contiguous blocks)."""
    return r * d // parts, (r + 1) * d // parts


def write_quest(path: str | os.PathLike, p: QuestParams, parts: int = 1) -> dict:
    """Generate and stream the data set to ``path`` in the binary format,
    partitioned for ``parts`` nodes. Returns summary statistics."""
    if not 1 <= parts <= MAX_PARTS:
        raise ValueError(f"parts must be in 1..{MAX_PARTS}, got {parts}")
    p.check()
    itemsize = 2 if p.items <= 65536 else 4
    dt = np.dtype("<u2" if itemsize == 2 else "<u4")
    meta = json.dumps({"generator": "quest", **asdict(p)}).encode()
    bounds = [part_bounds(p.transactions, parts, r) for r in range(parts)]
    total_items = 0
    maxlen = 0
    with lifetime.partial_file(path) as f:  # renamed into place when whole; removed on failure
        head = _HEADER.pack(MAGIC, p.transactions, p.items, parts, itemsize, len(meta)) + meta
        f.write(head + _CRC.pack(zlib.crc32(head)))
        for first, lens, flat in generate(p):
            if len(lens) and lens.max() > 65535:
                raise ValueError("a transaction longer than 65535 items cannot be stored")
            offs = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=offs[1:])
            for r, (a, b) in enumerate(bounds):
                lo, hi = max(a, first), min(b, first + len(lens))
                if lo >= hi:
                    continue
                i0, i1 = lo - first, hi - first
                seg = flat[offs[i0] : offs[i1]]
                body = b"".join(
                    (
                        _CHUNK_HDR.pack(r, lo, i1 - i0, len(seg)),
                        lens[i0:i1].astype("<u2").tobytes(),
                        seg.astype(dt).tobytes(),
                    )
                )
                f.write(body + _CRC.pack(zlib.crc32(body)))
            total_items += int(lens.sum())
            maxlen = max(maxlen, int(lens.max()) if len(lens) else 0)
    return {
        "transactions": p.transactions,
        "items_total": total_items,
        "parts": parts,
        "avg_len": total_items / max(1, p.transactions),
        "max_len": maxlen,
        "size_bytes": os.path.getsize(path),
    }


def _read_header(f, path) -> tuple[int, int, int, int, dict]:
    raw = f.read(_HEADER.size)
    if len(raw) < _HEADER.size:
        raise TransactionFileError(f"{path}: truncated header")
    magic, d, n, parts, itemsize, mlen = _HEADER.unpack(raw)
    if magic == _MAGIC_V1:
        raise TransactionFileError(
            f"{path}: written by an older parcomm (format 1, without checksums); regenerate it with `parcomm mine gen`"
        )
    if magic != MAGIC:
        raise TransactionFileError(f"{path}: not a parcomm Quest file (bad magic)")
    for name, value, lo, hi in (
        ("transactions", d, 0, MAX_TRANSACTIONS),
        ("items", n, 1, MAX_ITEMS),
        ("parts", parts, 1, MAX_PARTS),
        ("metadata length", mlen, 0, _MAX_META),
    ):
        if not lo <= value <= hi:
            raise TransactionFileError(f"{path}: header field {name} = {value} is outside {lo}..{hi}")
    if itemsize not in (2, 4) or (itemsize == 2 and n > 65536):
        raise TransactionFileError(f"{path}: header field itemsize = {itemsize} does not fit {n} items")
    meta_raw = f.read(mlen)
    crc = f.read(_CRC.size)
    if len(meta_raw) < mlen or len(crc) < _CRC.size:
        raise TransactionFileError(f"{path}: truncated header")
    if _CRC.unpack(crc)[0] != zlib.crc32(raw + meta_raw):
        raise TransactionFileError(f"{path}: header checksum mismatch (the file is corrupted)")
    try:
        meta = json.loads(meta_raw or b"{}")
    except (ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict):
        raise TransactionFileError(f"{path}: header metadata is not a JSON object")
    return d, n, parts, itemsize, meta


def quest_info(path: str | os.PathLike) -> dict:
    with open(path, "rb") as f:
        d, n, parts, itemsize, meta = _read_header(f, path)
    return {"transactions": d, "items": n, "parts": parts, "itemsize": itemsize, "params": meta}


def _check_chunk(path, where: str, lens: np.ndarray, items: np.ndarray, n: int) -> np.ndarray:
    """Offsets of a chunk's transactions, after checking what the format promises."""
    offs = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offs[1:])
    if offs[-1] != len(items):
        raise TransactionFileError(f"{path}: {where}: lengths add up to {offs[-1]}, the chunk holds {len(items)} items")
    if len(items):
        if int(items.max()) >= n:
            raise TransactionFileError(f"{path}: {where}: item id {int(items.max())} is not below N = {n}")
        rising = np.diff(items.astype(np.int64)) > 0
        starts = offs[1:-1]
        rising[starts[(starts > 0) & (starts < len(items))] - 1] = True  # a new transaction may start lower
        if not rising.all():
            raise TransactionFileError(f"{path}: {where}: items not strictly increasing within a transaction")
    return offs


def read_quest(path: str | os.PathLike, rank: int = 0, size: int = 1) -> Transactions:
    """Read partition ``rank`` of ``size`` (contiguous blocks of transactions).
    When ``size`` equals the file's partition count, only that partition's
    chunks are read; otherwise the chunks that overlap the range are. Every
    chunk read is checked (see the module docstring)."""
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        d, n, parts, itemsize, _ = _read_header(f, path)
        dt = np.dtype("<u2" if itemsize == 2 else "<u4")
        a, b = part_bounds(d, size, rank)
        lens_l, items_l = [], []
        expect = 0  # the next transaction a chunk must start at
        while True:
            at = f.tell()
            raw = f.read(_CHUNK_HDR.size)
            if not raw:
                break
            where = f"chunk at byte {at}"
            if len(raw) < _CHUNK_HDR.size:
                raise TransactionFileError(f"{path}: truncated {where}")
            part, first, ntx, nitems = _CHUNK_HDR.unpack(raw)
            if first != expect or not 1 <= ntx <= CHUNK or first + ntx > d or part >= parts:
                raise TransactionFileError(
                    f"{path}: {where}: header (part {part}, transactions {first}+{ntx}) "
                    f"does not continue the file (next transaction {expect} of {d})"
                )
            p0, p1 = part_bounds(d, parts, part)
            if not p0 <= first < first + ntx <= p1 or nitems > ntx * MAX_TRANSACTION_LEN:
                raise TransactionFileError(
                    f"{path}: {where}: header (part {part}, {ntx} transactions, {nitems} items) is inconsistent"
                )
            body = ntx * 2 + nitems * itemsize
            if at + _CHUNK_HDR.size + body + _CRC.size > file_size:
                raise TransactionFileError(f"{path}: truncated {where} (transactions {first}..{first + ntx})")
            expect = first + ntx
            if first >= b or first + ntx <= a:
                f.seek(body + _CRC.size, os.SEEK_CUR)
                continue
            data = f.read(body)
            (crc,) = _CRC.unpack(f.read(_CRC.size))
            if crc != zlib.crc32(raw + data):
                raise TransactionFileError(f"{path}: {where}: checksum mismatch (the file is corrupted)")
            lens = np.frombuffer(data, dtype="<u2", count=ntx).astype(np.int64)
            items = np.frombuffer(data, dtype=dt, offset=ntx * 2)
            offs = _check_chunk(path, where, lens, items, n)
            i0, i1 = max(a, first) - first, min(b, first + ntx) - first
            lens_l.append(lens[i0:i1])
            items_l.append(items[offs[i0] : offs[i1]])
        if expect != d:
            raise TransactionFileError(f"{path}: truncated: chunks cover transactions 0..{expect} of {d}")
    lengths = np.concatenate(lens_l) if lens_l else np.empty(0, np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    items = np.concatenate(items_l).astype(np.int32) if items_l else np.empty(0, np.int32)
    return Transactions(offsets, items)


def read_text(path: str | os.PathLike) -> Transactions:
    """Read a plain transactions file: one transaction per line, integer item
    ids separated by blanks or commas. A malformed line raises
    :class:`TransactionFileError` naming the file and line."""
    lens: list[int] = []
    flat: list[int] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            s = line.split("#", 1)[0].replace(",", " ").split()
            if not s:
                continue
            for tok in s:
                if not (tok.isdigit() and tok.isascii()):
                    raise TransactionFileError(f"{path}:{lineno}: {tok!r} is not a non-negative integer item id")
                if len(tok) > 9 or int(tok) >= MAX_ITEMS:
                    raise TransactionFileError(
                        f"{path}:{lineno}: item id {tok[:20]} is too large (item ids are below {MAX_ITEMS})"
                    )
                flat.append(int(tok))
            if len(s) > MAX_TRANSACTION_LEN:
                raise TransactionFileError(
                    f"{path}:{lineno}: {len(s)} items in one transaction, at most {MAX_TRANSACTION_LEN}"
                )
            lens.append(len(s))
    return normalize(np.array(lens, dtype=np.int64), np.array(flat, dtype=np.int64))


def write_text(path: str | os.PathLike, tx: Transactions) -> None:
    """One line per transaction, item ids separated by one blank."""
    n = len(tx)
    step = 1 << 16
    with lifetime.partial_file(path) as raw, io.TextIOWrapper(raw, encoding="ascii") as f:
        for start in range(0, n, step):  # convert in blocks: one tolist() per block, not per row
            stop = min(n, start + step)
            offs = (tx.offsets[start : stop + 1] - tx.offsets[start]).tolist()
            items = tx.items[tx.offsets[start] : tx.offsets[stop]].tolist()
            f.write("".join([" ".join(map(str, items[offs[i] : offs[i + 1]])) + "\n" for i in range(stop - start)]))


def is_quest_file(path: str | os.PathLike) -> bool:
    """A binary Quest file (any format version), by its content or its ``.qtx`` name:
    a damaged one must not be read as text."""
    with open(path, "rb") as f:
        return f.read(5) == MAGIC[:5] or str(path).endswith(".qtx")


def load(path: str | os.PathLike, rank: int = 0, size: int = 1) -> Transactions:
    """Partition ``rank`` of ``size`` of a binary Quest file or a text file."""
    if not os.path.exists(path):
        raise TransactionFileError(f"{path}: no such file")
    if is_quest_file(path):
        return read_quest(path, rank, size)
    tx = read_text(path)
    return tx if size == 1 else tx.slice(*part_bounds(len(tx), size, rank))


def count_transactions(path: str | os.PathLike) -> int:
    if is_quest_file(path):
        return quest_info(path)["transactions"]
    return len(read_text(path))
