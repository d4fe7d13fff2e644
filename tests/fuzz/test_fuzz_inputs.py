"""The fuzz corpus of user inputs (``formats_inputs``: unit strings, platform short forms, platform
TOML files and dicts, multicast trees, PlogP parameter files, command lines), run through the
harness: no traceback, no blow-up, and every error a clean one that names the file, field, line or
option. ``pytest tests/fuzz -s`` prints the table; ``python tests/fuzz/report.py`` is the same
without pytest.
"""

from __future__ import annotations

import harness
import pytest
from formats_inputs import FORMATS

#: What issue 14 asks of this corpus: at least this many inputs over these formats.
MIN_INPUTS = 14_000


@pytest.fixture(scope="module")
def results():
    """Every format's corpus, run once in parallel workers (one per CPU)."""
    out = harness.run_formats(FORMATS)
    print("\n" + harness.table(out.values()))
    return out


@pytest.mark.parametrize("name", [f.name for f in FORMATS])
def test_every_input_is_accepted_or_a_clean_error(results, name):
    harness.assert_clean(results[name])


def test_corpus_size(results):
    assert sum(r.count for r in results.values()) >= MIN_INPUTS
    assert all(sum(r.counts.values()) == r.count for r in results.values())


def test_corpus_is_deterministic():
    """The same seed gives the same inputs (a failure names an input anyone can regenerate)."""
    for fmt in FORMATS:
        for i in (0, 1, 997):
            a, b = harness.make_input(fmt, harness.SEED, i), harness.make_input(fmt, harness.SEED, i)
            assert harness.show(a, 10**7) == harness.show(b, 10**7), (fmt.name, i)
        assert harness.show(harness.make_input(fmt, harness.SEED, 1), 10**7) != harness.show(
            harness.make_input(fmt, harness.SEED + 1, 1), 10**7
        ), fmt.name
