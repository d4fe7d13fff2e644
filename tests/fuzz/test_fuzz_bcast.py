"""Fuzzing ``parcomm bcast``'s inputs from outside: the hash list it downloads
(``KEY.parcomm.json``) and the frames a peer sends after the handshake.

Every malformed input must end as a clean error (``ValueError`` naming a field
for a hash list; ``WireError`` for a frame) or be accepted; a decoded frame is
then fed to a node's state machine, which must never raise. Seeded, so the
corpus is the same on every run: ``python -m pytest tests/fuzz/test_fuzz_bcast.py -s``
prints the counts per format and outcome.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
from collections import Counter

import numpy as np
import pytest
from parcomm.apps.bcast import codec
from parcomm.apps.bcast.layout import Layout
from parcomm.apps.bcast.manifest import Manifest
from parcomm.apps.bcast.messages import MESSAGE_TYPES, PeerMessage, Start
from parcomm.apps.bcast.node import BcastConfig, BcastNode
from parcomm.apps.bcast.wire import MAX_FIELDS, Record, WireError, decode_body, encode_record

SEED = 20261124
MANIFESTS = 3000
FRAMES = 4000

_HUGE = [
    2**63,
    2**64 + 1,
    10**400,
    -1,
    -(2**63) - 1,
    1e308,
    float("inf"),
    float("nan"),
    0,
    True,
    None,
    "1",
    [],
    {},
    "x" * 5000,
]


def _valid_manifest(rng: random.Random) -> dict:
    size = rng.choice([0, 1, 1000, 65536, 3 * 65536 + 7])
    piece = rng.choice([1024, 65536])
    pieces = -(-size // piece)
    return {
        "format": "parcomm-bcast-manifest",
        "version": 1,
        "size": size,
        "etag": '"abc"',
        "piece_size": piece,
        "piece_sha256": base64.b64encode(bytes(32 * pieces)).decode(),
        "sha256": hashlib.sha256(b"").hexdigest(),
    }


def _mutate_manifest(rng: random.Random) -> bytes:
    doc = _valid_manifest(rng)
    how = rng.randrange(7)
    if how == 0:  # a field gets an absurd or ill-typed value
        doc[rng.choice(list(doc))] = rng.choice(_HUGE)
    elif how == 1:  # a field goes missing
        doc.pop(rng.choice(list(doc)))
    elif how == 2:  # deep nesting
        depth = rng.choice([10, 1000, 100_000])
        return (b"[" * depth + b"]" * depth) if rng.random() < 0.5 else (b'{"a":' * depth + b"1" + b"}" * depth)
    elif how == 3:  # not an object
        return json.dumps(rng.choice([[1, 2], "str", 3, None])).encode()
    text = json.dumps(doc, allow_nan=True).encode()
    if how == 4:  # truncated
        return text[: rng.randrange(len(text) + 1)]
    if how == 5:  # bytes flipped
        raw = bytearray(text)
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    return text  # how == 6 (a value change only) or 0/1 above


def _mutate_frame(rng: random.Random, layout: Layout) -> bytes:
    """A frame body: a real message's record with its parts corrupted, or noise."""
    how = rng.randrange(8)
    if how == 0:
        return rng.randbytes(rng.randrange(64))
    if how >= 5:  # a well-formed message of the protocol, with adversarial values
        klass = rng.choice(list(MESSAGE_TYPES.values()))
        ints = [
            rng.choice([0, 1, 3, 4, -1, layout.pieces - 1, layout.pieces, layout.works, 2**63 - 1, -(2**63)])
            for _ in klass.FIELDS
        ]
        payload = rng.choice(
            [
                b"",
                rng.randbytes(rng.randrange(12)),
                bytes((layout.pieces + 7) // 8),
                np.asarray([0, layout.works - 1, layout.works, 2**32 - 1], ">u4").tobytes(),
            ]
        )
        return encode_record(
            Record(klass.TYPE, tuple(ints[: sum(1 for f in klass.FIELDS if f not in ("bits", "works"))]), payload)
        )[4:]
    type_code = rng.choice([rng.randrange(1, 15), rng.randrange(65536)])
    n_fields = rng.choice([0, 1, 2, MAX_FIELDS, MAX_FIELDS + 1, 65535])
    fields = [
        rng.choice([0, 1, layout.pieces - 1, layout.pieces, layout.works, -1, 2**63 - 1, -(2**63)])
        for _ in range(min(n_fields, MAX_FIELDS))
    ]
    payload = rng.choice(
        [
            None,
            b"",
            rng.randbytes(rng.randrange(0, 40)),
            bytes((layout.pieces + 7) // 8),
            np.asarray([0, layout.works, 2**32 - 1], ">u4").tobytes(),
        ]
    )
    body = encode_record(Record(type_code, tuple(fields), payload))[4:]
    if how == 1:  # lie about the field count
        body = struct.pack("!HHB", type_code, n_fields, body[4]) + body[5:]
    elif how == 2:  # unknown flags
        body = body[:4] + bytes([rng.randrange(256)]) + body[5:]
    elif how == 3:  # truncated
        body = body[: rng.randrange(len(body) + 1)]
    return body


def _classify_manifest(raw: bytes) -> str:
    try:
        Manifest.from_json(raw)
    except ValueError as exc:
        msg = str(exc)
        assert msg and "Traceback" not in msg
        return "clean error"
    return "accepted"


def _classify_frame(body: bytes, node: BcastNode, t: list[float]) -> str:
    try:
        record = decode_body(body)
        msg, _ = codec.decode(record)
    except WireError as exc:
        assert str(exc)
        return "clean error"
    t[0] += 0.01
    node.handle(t[0], PeerMessage(1, msg))  # a member's odd message must not break the node
    return "accepted"


def _run(kind: str, n: int, one) -> Counter:
    counts: Counter = Counter()
    for i in range(n):
        try:
            counts[one(i)] += 1
        except RecursionError:
            counts["blow-up"] += 1
        except AssertionError:
            raise
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            counts["traceback"] += 1
            counts.setdefault("first", f"{type(exc).__name__}: {exc}")  # type: ignore[arg-type]
    print(f"\n{kind:<22} {n:>6} inputs  " + "  ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return counts


def test_fuzz_hash_lists():
    rng = random.Random(SEED)
    corpus = [_mutate_manifest(rng) for _ in range(MANIFESTS)]
    counts = _run("bcast hash list", len(corpus), lambda i: _classify_manifest(corpus[i]))
    assert counts["traceback"] == 0 and counts["blow-up"] == 0, counts
    assert counts["clean error"] > MANIFESTS // 2  # the corpus really is mostly malformed


@pytest.mark.parametrize("algo", ["steal", "nonsteal"])
def test_fuzz_peer_frames(algo):
    rng = random.Random(f"{SEED}/{algo}")
    layout = Layout(40 * 1024, 1024, 3)
    node = BcastNode(0, 4, layout, algo, BcastConfig(piece_size=1024, work_pieces=3))
    node.handle(0.0, Start())
    t = [0.0]
    corpus = [_mutate_frame(rng, layout) for _ in range(FRAMES // 2)]
    counts = _run(f"bcast peer frame ({algo})", len(corpus), lambda i: _classify_frame(corpus[i], node, t))
    assert counts["traceback"] == 0 and counts["blow-up"] == 0, counts
    assert counts["clean error"] > 0 and counts["accepted"] > 0
