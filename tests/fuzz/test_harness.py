"""The fuzz harness itself: each outcome is recognised for what it is, and a worker that crashes
or hangs costs one input, not the run."""

from __future__ import annotations

import os
import random
import time

import harness
from harness import ACCEPTED, BLOWUP, CLEAN, TRACEBACK, UNCLEAR, Format


def _by_index(rng: random.Random) -> int:
    # make_input seeds each input's generator from (seed, name, index); recover the index's behaviour
    return rng.randrange(6)


def _target(kind: int):
    if kind == 0:
        return "fine"
    if kind == 1:
        raise ValueError("--opt: value 'x' is not a number")
    if kind == 2:
        raise ValueError("something\nspanning lines")
    if kind == 3:
        return {}["missing"]  # KeyError
    if kind == 4:
        time.sleep(30)  # the alarm interrupts it
    if kind == 5:
        blob = bytearray(4 << 30)  # beyond the memory cap: MemoryError
        return len(blob)
    raise AssertionError(kind)


EXPECTED = {0: ACCEPTED, 1: CLEAN, 2: UNCLEAR, 3: TRACEBACK, 4: BLOWUP, 5: BLOWUP}


def test_each_outcome_is_classified():
    fmt = Format(
        "probe", _by_index, _target, 40, names=harness.names_any(["--opt"]), time_cap_s=0.3, memory_cap=512 << 20
    )
    result = harness.run_formats([fmt], seed=3, jobs=1)["probe"]
    want = {o: 0 for o in harness.OUTCOMES}
    for i in range(fmt.count):
        want[EXPECTED[harness.make_input(fmt, 3, i)]] += 1
    assert dict(result.counts) == {k: v for k, v in want.items() if v}, result.summary()
    assert any("time cap" in e for e in result.examples[BLOWUP]), result.summary()
    assert any("MemoryError" in e for e in result.examples[BLOWUP]), result.summary()
    assert any("KeyError" in e for e in result.examples[TRACEBACK]), result.summary()


def _die_on_odd(rng: random.Random) -> int:
    return rng.randrange(100)


def _abort_or_hang(n: int):
    if n % 10 == 1:
        os.abort()  # as a failed native allocation does
    if n % 10 == 3:
        os.kill(os.getpid(), 9)
    return n


def test_a_dying_worker_costs_one_input():
    fmt = Format("crash", _die_on_odd, _abort_or_hang, 60)
    result = harness.run_formats([fmt], seed=5, jobs=2)["crash"]
    dying = sum(harness.make_input(fmt, 5, i) % 10 in (1, 3) for i in range(fmt.count))
    assert dying > 0
    assert result.counts[BLOWUP] == dying, result.summary()
    assert result.counts[ACCEPTED] == fmt.count - dying, result.summary()
    assert any("signal 6" in e for e in result.examples[BLOWUP]), result.summary()


def test_unclear_messages():
    fmt = Format("m", lambda r: 0, lambda _: None, 1, names=harness.names_any(["tcp.rto_min_s"]))
    for message, problem in (
        ("", "empty"),
        ("a\nb", "lines"),
        ("tcp.rto_min_s " + "x" * 2000, "characters"),
        ("bad value", "names no"),
    ):
        assert problem in harness._message_problem(message, fmt, None)
    assert harness._message_problem("hosts.h0.tcp.rto_min_s must be positive", fmt, None) is None


def test_mutators_are_deterministic_and_hostile():
    text = 'name = "x"\nn = 4\nrate = "1G"\n'
    doc = {"a": [1, 2, {"b": "c"}], "n": 3}
    outs = [harness.mutate_text(random.Random(i), text) for i in range(200)]
    assert outs == [harness.mutate_text(random.Random(i), text) for i in range(200)]
    assert sum(o != text for o in outs) > 190
    docs = [harness.mutate_doc(random.Random(i), doc) for i in range(200)]
    assert doc == {"a": [1, 2, {"b": "c"}], "n": 3}  # the seed document is left alone
    assert sum(d != doc for d in docs) > 150
    data = bytes(range(64))
    assert sum(harness.mutate_bytes(random.Random(i), data) != data for i in range(100)) > 95


def test_to_toml_round_trips():
    import tomllib

    doc = {
        "name": "x",
        "n": 4,
        "f": 1.5,
        "ok": True,
        "tcp": {"rto_min_s": "200ms"},
        "hosts": [{"name": "a", "mtu": 9000}, {"name": "b"}],
        "nums": [1, 2, 3],
    }
    assert tomllib.loads(harness.to_toml(doc)) == doc
