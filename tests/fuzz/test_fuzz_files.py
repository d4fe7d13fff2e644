"""The second fuzz corpus (``formats_files``: storage profiles, conformance matrices, ``--kwargs``,
addresses files, key files, rendezvous entries, ``mine gen`` options), run through the harness: no
traceback, no blow-up, every error a clean one that names the file or option. ``python
tests/fuzz/report.py --only "storage profile"`` runs one of them without pytest.
"""

from __future__ import annotations

import harness
import pytest
from formats_files import FORMATS


@pytest.fixture(scope="module")
def results():
    out = harness.run_formats(FORMATS)
    print("\n" + harness.table(out.values()))
    return out


@pytest.mark.parametrize("name", [f.name for f in FORMATS])
def test_every_input_is_accepted_or_a_clean_error(results, name):
    harness.assert_clean(results[name])


def test_issue_30_reproducers_are_in_the_corpus():
    """The classes issue 30 found in `bcast sim --storage-profile` are generated, in both formats."""
    fmt = next(f for f in FORMATS if f.name == "storage profile")
    seen = set()
    for i in range(fmt.count):
        kind, data = harness.make_input(fmt, harness.SEED, i)
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        if b"9" * 4301 in raw:
            seen.add((kind, "huge integer"))
        if b"\xff\xfe" in raw:
            seen.add((kind, "not UTF-8"))
        if b"[" * 1000 in raw or b"{" * 1000 in raw:
            seen.add((kind, "deep nesting"))
        if b"NaN" in raw and b"message_latency_s" in raw:
            seen.add((kind, "NaN latency"))
    for kind in ("json", "toml"):
        for case in ("huge integer", "not UTF-8", "deep nesting"):
            assert (kind, case) in seen, (kind, case)
    assert ("json", "NaN latency") in seen
