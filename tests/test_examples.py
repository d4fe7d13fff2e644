"""The examples are documentation: each runs and prints exactly its recorded output
(fixed seeds make simulated results reproducible bit for bit)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*/*.py") if p.stem == p.parent.name)


def test_examples_exist():
    assert len(SCRIPTS) >= 3


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_output_matches(script: Path):
    expected = script.with_suffix(".out").read_text()
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
