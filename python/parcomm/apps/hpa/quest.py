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

Two formats:

* **binary** (``.qtx``): a header, then chunks ``(part, first, ntx, nitems)``
  + transaction lengths (uint16) + items (uint16 when N <= 65536, else
  uint32). Transactions are split into ``P`` contiguous partitions; a chunk
  never straddles two, so rank ``r`` reads only its own chunks.
* **text**: one transaction per line, integer item ids separated by blanks
  (commas are accepted too); blank lines and ``#`` comments are skipped.
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

MAGIC = b"PCQTX1\0\0"
CHUNK = 8192
_HEADER = struct.Struct("<8sQIIBI")  # magic, D, N, P, itemsize, json length
_CHUNK_HDR = struct.Struct("<IQIQ")  # part, first transaction, ntx, nitems


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
        return self.items[self.offsets[i]:self.offsets[i + 1]]

    def to_lists(self) -> list[list[int]]:
        return [self[i].tolist() for i in range(len(self))]

    @staticmethod
    def from_lists(rows) -> "Transactions":
        rows = [list(r) for r in rows]
        lens = np.array([len(r) for r in rows], dtype=np.int64)
        flat = np.fromiter((x for r in rows for x in r), dtype=np.int64, count=int(lens.sum()))
        return normalize(lens, flat)

    def slice(self, start: int, stop: int) -> "Transactions":
        o = self.offsets[start:stop + 1]
        return Transactions(o - o[0], self.items[o[0]:o[-1]])


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
        if self.transactions < 0:
            raise ValueError(f"transactions must be >= 0, got {self.transactions}")
        if self.items < 1:
            raise ValueError(f"items must be >= 1, got {self.items}")
        if self.patterns < 1:
            raise ValueError(f"patterns must be >= 1, got {self.patterns}")
        if not self.avg_len >= 1:
            raise ValueError(f"avg_len (T) must be >= 1, got {self.avg_len}")
        if not 1 <= self.avg_pattern_len <= self.items:
            raise ValueError(f"avg_pattern_len (I) must be in [1, items], got {self.avg_pattern_len}")
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


def _gen_chunk(p: QuestParams, pats: Patterns, cum: np.ndarray, chunk: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Lengths and concatenated (sorted, unique) items of ``n`` transactions."""
    rng = np.random.default_rng([p.seed, chunk])
    sizes = 1 + rng.poisson(p.avg_len - 1, size=n)
    # Pre-draw generous batches; refill when exhausted.
    out_lens = np.empty(n, dtype=np.int64)
    out: list[np.ndarray] = []
    pending: np.ndarray | None = None
    buf_pick = rng.random(4 * n + 16)
    buf_u = rng.random(16 * n + 64)
    ip = iu = 0
    for t in range(n):
        target = int(sizes[t])
        parts: list[np.ndarray] = []
        have = 0
        while have < target:
            if pending is not None:
                pat, pending = pending, None
            else:
                if ip >= len(buf_pick):
                    buf_pick, ip = rng.random(len(buf_pick)), 0
                j = min(int(np.searchsorted(cum, buf_pick[ip], side="right")), len(cum) - 1)
                ip += 1
                pat = pats.items[j]
                c = pats.corruption[j]
                # drop items while a uniform draw is below the corruption level
                drop = 0
                while drop < len(pat):
                    if iu >= len(buf_u):
                        buf_u, iu = rng.random(len(buf_u)), 0
                    u = buf_u[iu]
                    iu += 1
                    if u >= c:
                        break
                    drop += 1
                if drop:
                    keep = rng.permutation(len(pat))[: len(pat) - drop]
                    pat = pat[np.sort(keep)]
                if not len(pat):
                    continue
            if have + len(pat) > target and have > 0:
                if iu >= len(buf_u):
                    buf_u, iu = rng.random(len(buf_u)), 0
                u = buf_u[iu]
                iu += 1
                if u >= 0.5:
                    pending = pat
                    break
            parts.append(pat)
            have += len(pat)
        row = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int32)
        out.append(row)
        out_lens[t] = len(row)
    flat = np.concatenate(out) if out else np.empty(0, np.int32)
    return out_lens, flat


def generate(p: QuestParams) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Yield ``(first transaction index, lengths, items)`` chunk by chunk."""
    p.check()
    pats = make_patterns(p)
    cum = np.cumsum(pats.weights)
    for chunk in range((p.transactions + CHUNK - 1) // CHUNK):
        first = chunk * CHUNK
        n = min(CHUNK, p.transactions - first)
        lens, flat = _gen_chunk(p, pats, cum, chunk, n)
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
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    p.check()
    itemsize = 2 if p.items <= 65536 else 4
    dt = np.dtype("<u2" if itemsize == 2 else "<u4")
    meta = json.dumps({"generator": "quest", **asdict(p)}).encode()
    bounds = [part_bounds(p.transactions, parts, r) for r in range(parts)]
    total_items = 0
    maxlen = 0
    tmp = Path(str(path) + ".part")
    with open(tmp, "wb") as f:
        f.write(_HEADER.pack(MAGIC, p.transactions, p.items, parts, itemsize, len(meta)))
        f.write(meta)
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
                seg = flat[offs[i0]:offs[i1]]
                f.write(_CHUNK_HDR.pack(r, lo, i1 - i0, len(seg)))
                f.write(lens[i0:i1].astype("<u2").tobytes())
                f.write(seg.astype(dt).tobytes())
            total_items += int(lens.sum())
            maxlen = max(maxlen, int(lens.max()) if len(lens) else 0)
    os.replace(tmp, path)
    return {"transactions": p.transactions, "items_total": total_items, "parts": parts,
            "avg_len": total_items / max(1, p.transactions), "max_len": maxlen, "bytes": os.path.getsize(path)}


def _read_header(f, path) -> tuple[int, int, int, int, dict]:
    raw = f.read(_HEADER.size)
    if len(raw) < _HEADER.size:
        raise TransactionFileError(f"{path}: truncated header")
    magic, d, n, parts, itemsize, mlen = _HEADER.unpack(raw)
    if magic != MAGIC:
        raise TransactionFileError(f"{path}: not a parcomm Quest file (bad magic)")
    if itemsize not in (2, 4):
        raise TransactionFileError(f"{path}: bad item size {itemsize}")
    meta = json.loads(f.read(mlen) or b"{}")
    return d, n, parts, itemsize, meta


def quest_info(path: str | os.PathLike) -> dict:
    with open(path, "rb") as f:
        d, n, parts, itemsize, meta = _read_header(f, path)
    return {"transactions": d, "items": n, "parts": parts, "itemsize": itemsize, "params": meta}


def read_quest(path: str | os.PathLike, rank: int = 0, size: int = 1) -> Transactions:
    """Read partition ``rank`` of ``size`` (contiguous blocks of transactions).
    When ``size`` equals the file's partition count, only that partition's
    chunks are read; otherwise the chunks that overlap the range are."""
    with open(path, "rb") as f:
        d, _n, parts, itemsize, _ = _read_header(f, path)
        dt = np.dtype("<u2" if itemsize == 2 else "<u4")
        a, b = part_bounds(d, size, rank)
        lens_l, items_l = [], []
        while True:
            raw = f.read(_CHUNK_HDR.size)
            if not raw:
                break
            if len(raw) < _CHUNK_HDR.size:
                raise TransactionFileError(f"{path}: truncated chunk header at byte {f.tell() - len(raw)}")
            part, first, ntx, nitems = _CHUNK_HDR.unpack(raw)
            body = ntx * 2 + nitems * itemsize
            if first >= b or first + ntx <= a:
                f.seek(body, os.SEEK_CUR)
                continue
            lens = np.frombuffer(f.read(ntx * 2), dtype="<u2").astype(np.int64)
            items = np.frombuffer(f.read(nitems * itemsize), dtype=dt)
            if len(lens) != ntx or len(items) != nitems:
                raise TransactionFileError(f"{path}: truncated chunk of transactions {first}..{first + ntx}")
            offs = np.zeros(ntx + 1, dtype=np.int64)
            np.cumsum(lens, out=offs[1:])
            i0, i1 = max(a, first) - first, min(b, first + ntx) - first
            lens_l.append(lens[i0:i1])
            items_l.append(items[offs[i0]:offs[i1]])
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
                    raise TransactionFileError(
                        f"{path}:{lineno}: {tok!r} is not a non-negative integer item id")
                v = int(tok)
                if v >= 2**31:
                    raise TransactionFileError(f"{path}:{lineno}: item id {v} is too large (max 2^31-1)")
                flat.append(v)
            lens.append(len(s))
    return normalize(np.array(lens, dtype=np.int64), np.array(flat, dtype=np.int64))


def write_text(path: str | os.PathLike, tx: Transactions) -> None:
    with open(path, "w") as f:
        for i in range(len(tx)):
            f.write(" ".join(map(str, tx[i].tolist())))
            f.write("\n")


def is_quest_file(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(len(MAGIC)) == MAGIC


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
