"""What a measurement runs its rank programs with: ``runner(program, kwargs)``
runs ``program(comm, **kwargs)`` on every rank of the target (simulated,
emulated or real) and returns the ranks' results, rank 0 first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Runner = Callable[[Callable[..., Any], dict], list]
