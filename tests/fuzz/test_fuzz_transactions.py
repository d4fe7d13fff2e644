"""Fuzzing the transactions readers (``.qtx`` and text) that ``parcomm mine``
and the oguchi study feed to Apriori and HPA.

A corrupted ``.qtx`` must always be detected (checksums and structure), never
mined; every error is a ``TransactionFileError`` naming the file; nothing
allocates by a number read from the file. Seeded: the corpus is the same on
every run; ``-s`` prints the counts per format and outcome.
"""

from __future__ import annotations

import random
import resource
from collections import Counter

import pytest
from parcomm.apps.hpa.quest import MAX_ITEMS, QuestParams, TransactionFileError, load, write_quest

SEED = 14
QTX = 3000
TEXT = 2000


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    d = tmp_path_factory.mktemp("qtx")
    files = []
    for i, (kw, parts) in enumerate(
        [
            (dict(transactions=300, items=50, patterns=20), 1),
            (dict(transactions=400, items=70000, patterns=30, avg_pattern_len=3), 3),
            (dict(transactions=0), 1),
        ]
    ):
        path = d / f"orig{i}.qtx"
        write_quest(path, QuestParams(**kw), parts)
        files.append(path.read_bytes())
    return files


def _corrupt(rng: random.Random, raw: bytes) -> bytes:
    data = bytearray(raw)
    how = rng.randrange(5)
    if how == 0:  # truncation
        return bytes(data[: rng.randrange(len(data))])
    if how == 1:  # one flipped bit
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    elif how == 2:  # a few random bytes
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == 3:  # a header or chunk-header field set to something absurd
        i = rng.randrange(min(len(data), 64))
        data[i : i + 8] = rng.choice([b"\xff" * 8, b"\0" * 8, (2**31 - 1).to_bytes(8, "little")])
    else:  # bytes appended
        data += rng.randbytes(rng.randint(1, 40))
    out = bytes(data)
    return out if out != raw else out + b"\0"


def _text(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randint(1, 20)):
        kind = rng.randrange(8)
        if kind == 0:
            lines.append(" ".join(str(rng.randrange(100)) for _ in range(rng.randint(1, 10))))
        elif kind == 1:
            lines.append(f"1 {rng.choice([2**31 - 1, MAX_ITEMS, 10**30, -5])} 3")
        elif kind == 2:
            lines.append(rng.choice(["a b c", "1.5 2", "1e9", "0x10", "\u0661\u0662", "1,,2", "# note"]))
        elif kind == 3:
            lines.append(" ".join("7" for _ in range(rng.choice([10, 70000]))))
        elif kind == 4:
            lines.append(rng.randbytes(rng.randint(1, 30)).decode("latin-1"))
        else:
            lines.append(" ".join(str(rng.randrange(MAX_ITEMS)) for _ in range(rng.randint(1, 5))))
    return "\n".join(lines).encode("utf-8", "surrogateescape")


def _outcome(path) -> str:
    try:
        load(path)
    except TransactionFileError as exc:
        assert str(path) in str(exc), exc  # names the file
        return "clean error"
    return "accepted"


def _run(kind: str, inputs, tmp_path, suffix: str) -> Counter:
    counts: Counter = Counter()
    path = tmp_path / f"input{suffix}"
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, hard))  # a blow-up fails fast instead of swapping
    try:
        for raw in inputs:
            path.write_bytes(raw)
            try:
                counts[_outcome(path)] += 1
            except MemoryError:
                counts["blow-up"] += 1
            except AssertionError:
                raise
            except Exception as exc:  # noqa: BLE001 - the outcome under test
                counts["traceback"] += 1
                counts.setdefault(f"first: {type(exc).__name__}: {exc}"[:200], 0)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    print(f"\n{kind:<22} {len(inputs):>6} inputs  " + "  ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return counts


def test_fuzz_corrupted_qtx_is_always_detected(originals, tmp_path):
    rng = random.Random(SEED)
    corpus = [_corrupt(rng, rng.choice(originals)) for _ in range(QTX)]
    counts = _run("corrupted .qtx", corpus, tmp_path, ".qtx")
    assert counts["traceback"] == 0 and counts["blow-up"] == 0, counts
    assert counts["accepted"] == 0, counts  # every corrupted file is refused, never mined


def test_fuzz_text_transactions(tmp_path):
    rng = random.Random(SEED + 1)
    corpus = [_text(rng) for _ in range(TEXT)]
    counts = _run("text transactions", corpus, tmp_path, ".txt")
    assert counts["traceback"] == 0 and counts["blow-up"] == 0, counts
    assert counts["clean error"] > 0 and counts["accepted"] > 0


def test_huge_item_id_is_refused_before_any_allocation(tmp_path):
    """Issue 14: two lines with item id 2147483647 tried to allocate 16 GiB."""
    path = tmp_path / "two.txt"
    path.write_text("1 2 3\n4 2147483647\n")
    with pytest.raises(TransactionFileError, match=r"two.txt:2: item id 2147483647 is too large"):
        load(path)


def test_format1_files_are_refused_with_a_hint(originals, tmp_path):
    path = tmp_path / "old.qtx"
    path.write_bytes(b"PCQTX1\0\0" + originals[0][8:])
    with pytest.raises(TransactionFileError, match="regenerate it with `parcomm mine gen`"):
        load(path)
