"""`import parcomm` stays small: the Communicator stack loads when first used (issue 35)."""

from __future__ import annotations

import subprocess
import sys


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_importing_parcomm_leaves_the_communicator_stack_unloaded():
    loaded = _fresh(
        "import sys, parcomm; print(sorted(m for m in ('parcomm.comm', 'parcomm.collectives', 'asyncio')"
        " if m in sys.modules))"
    )
    assert loaded == "[]"


def test_a_collective_loads_its_implementation_on_first_call():
    # No import of parcomm.collectives: the composition root names it and the first call loads it.
    code = """
from parcomm.comm import run_sim
from parcomm.platform import star

async def program(comm):
    return await comm.allreduce(comm.rank + 1)

res = run_sim(program, star(4), 4, seed=1)
print(res.results)
"""
    assert _fresh(code) == "[10, 10, 10, 10]"


def test_subpackages_are_attributes_of_the_package():
    assert _fresh("import parcomm; print(parcomm.platform.star(2)['hosts'][1]['name'])") == "h1"
