"""The faster Quest generator writes exactly the files the original one did.

The sha256 digests below were recorded with the code BEFORE the speed-up
(python/parcomm/apps/hpa/quest.py with the per-transaction loop that called
``rng.permutation`` once per corrupted pattern and ``np.unique`` once per
transaction), by writing each parameter set with ``write_quest`` (binary) or
``write_text(generate_transactions(p))`` (text, as ``parcomm mine gen
--format text`` does). They are not computed by the code under test: if a
digest changes, the generator's output changed, and studies that depend on
the exact files would silently change with it.

Binary files have since gained CRC-32 checksums (format 2: one after the
header, one after each chunk); the digests still pin format 1's bytes, which
``_format1_bytes`` recovers from a format-2 file by dropping exactly those
checksums and writing the old magic. So what is pinned, the generated
transactions and their layout, is unchanged.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import parcomm.apps.hpa.quest as quest
import pytest
from parcomm.apps.hpa.quest import (
    QuestParams,
    generate_transactions,
    make_patterns,
    write_quest,
    write_text,
)

# name -> (QuestParams keywords, parts, format, sha256 recorded with the original code)
CASES = {
    "defaults_text": (
        dict(transactions=5000),
        1,
        "text",
        "f7b336736c7e30fa215818496dcdc431fb259463482bb341d853226ab527bc60",
    ),
    "small_items_binary": (
        dict(transactions=5000, items=50, patterns=20),
        1,
        "binary",
        "ad95f8207d00879960bc7cb99fb1f01671dd89d18ece246a38fcf5177759ac03",
    ),
    "correlation0": (
        dict(transactions=5000, correlation=0.0),
        1,
        "binary",
        "d97041d9408062d06bf59f47cffefce292c0e52286fc64976022cf617aadb69c",
    ),
    "corruption0": (
        dict(transactions=5000, corruption=0.0),
        1,
        "binary",
        "fc09550b2507ec403621a0a39b58dda8f52e027eba40f956ef1b8b7f043bbcc8",
    ),
    "corruption1_text": (
        dict(corruption=1.0, transactions=3000),
        1,
        "text",
        "1550822c0f3ffeb04036a5c0cae7973359ecd7155026e185220587b0746a1ac3",
    ),
    # two chunks (CHUNK = 8192), the second of one transaction, over 7 partitions
    "two_chunks_parts7": (
        dict(transactions=8193, seed=5),
        7,
        "binary",
        "235f106e3b257f6585e7d18442a4d960006dac7cd1b5501e48ca0d2b6aada503",
    ),
    "fractional_T_I_parts4": (
        dict(transactions=6000, avg_len=7.5, avg_pattern_len=2.5, seed=9),
        4,
        "binary",
        "b45dc7b110efba5b6afbbe7abcd6862556302e8016172d3730652a97b3f06fa8",
    ),
    # N > 65536: items stored as uint32
    "uint32_items": (
        dict(transactions=3000, items=70000, patterns=500, avg_pattern_len=6),
        2,
        "binary",
        "dda3e9ec59f485552aad191ed7f5f7eccc6805e31a031ed4a1e4521808b65290",
    ),
    # long patterns: many permutations with rejection draws, refills of both batches
    "long_patterns": (
        dict(transactions=8000, avg_len=30, avg_pattern_len=15, items=200, patterns=50, seed=3),
        1,
        "binary",
        "7098a7fb502108c8700ed76ecd7e74c8e83163f666c4f6f92cd22a082987e669",
    ),
    "tiny_text": (
        dict(transactions=5000, items=3, patterns=5, avg_pattern_len=3, avg_len=4),
        1,
        "text",
        "ab156187c66b3cf2f22fd8b216da9ffa34e4ba89acf48ca104a4623c98862436",
    ),
    "empty": (dict(transactions=0), 1, "binary", "b36b8f0c9e85f7692eeed787eacd8752fc34d04ee97c0ea6fde920c1690679e5"),
}


def _format1_bytes(raw: bytes) -> bytes:
    """A format-2 file's bytes as format 1 wrote them: no checksums, the old magic."""
    head = struct.Struct("<8sQIIBI")
    chunk = struct.Struct("<IQIQ")
    magic, d, n, parts, itemsize, mlen = head.unpack_from(raw)
    assert magic == b"PCQTX2\0\0"
    out = [b"PCQTX1\0\0" + raw[8 : head.size + mlen]]
    at = head.size + mlen + 4
    while at < len(raw):
        _, _, ntx, nitems = chunk.unpack_from(raw, at)
        end = at + chunk.size + 2 * ntx + itemsize * nitems
        out.append(raw[at:end])
        at = end + 4
    assert at == len(raw)
    return b"".join(out)


def _write(tmp_path, kw, parts, fmt):
    p = QuestParams(**kw)
    path = tmp_path / ("q.qtx" if fmt == "binary" else "q.txt")
    if fmt == "binary":
        write_quest(path, p, parts)
        return hashlib.sha256(_format1_bytes(path.read_bytes())).hexdigest()
    write_text(path, generate_transactions(p))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_file_is_byte_identical_to_the_original_generator(tmp_path, name):
    kw, parts, fmt, digest = CASES[name]
    assert _write(tmp_path, kw, parts, fmt) == digest


def test_numpy_fallback_gives_the_same_file(tmp_path, monkeypatch):
    """Without the bulk permutation emulation (rng.permutation one by one, as
    used if numpy's shuffling ever changes), the file is the same too."""
    kw, parts, fmt, digest = CASES["corruption1_text"]
    monkeypatch.setattr(quest, "_EMULATION_OK", False)
    assert _write(tmp_path, kw, parts, fmt) == digest


@pytest.mark.parametrize("buffered_half", [False, True])
def test_bulk_permutations_match_numpy_and_leave_the_same_state(buffered_half):
    assert quest._emulation_ok()
    meta = np.random.default_rng(42)
    for trial in range(30):
        ks = meta.integers(1, (3, 9, 70)[trial % 3], size=int(meta.integers(1, 60))).tolist()
        a = np.random.default_rng([trial, 3])
        a.random(5)
        while a.bit_generator.state["has_uint32"] != int(buffered_half):
            a.permutation(2)  # one 32-bit draw: half of a 64-bit output stays buffered (or is used up)
        a.random(2)  # doubles leave the buffered half alone
        b = np.random.default_rng()
        b.bit_generator.state = a.bit_generator.state
        assert b.bit_generator.state["has_uint32"] == int(buffered_half)
        want = np.concatenate([a.permutation(k) for k in ks])
        got = quest._permutations_emulated(b, ks)
        assert np.array_equal(want, got)
        assert a.bit_generator.state["state"] == b.bit_generator.state["state"]
        assert a.bit_generator.state["has_uint32"] == b.bit_generator.state["has_uint32"]
        assert np.array_equal(a.permutation(6), b.permutation(6))
        assert np.array_equal(a.random(3), b.random(3))


def test_chunk_output_types_and_rows():
    p = QuestParams(transactions=500, avg_len=12, items=80, patterns=30, seed=4)
    pats = make_patterns(p)
    lens, flat = quest._gen_chunk(p, pats, np.cumsum(pats.weights), 0, 500)
    assert lens.dtype == np.int64 and flat.dtype == np.int32
    assert len(lens) == 500 and int(lens.sum()) == len(flat) and lens.min() >= 1
    offs = np.concatenate([[0], np.cumsum(lens)])
    for i in range(500):
        row = flat[offs[i] : offs[i + 1]]
        assert np.all(np.diff(row) > 0) and row.min() >= 0 and row.max() < 80
