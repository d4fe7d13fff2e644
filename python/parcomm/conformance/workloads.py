"""What a scenario runs, on each side.

``incast``: the emulation runs :meth:`parcomm.emu.EmuCluster.incast_raw`
(plain sockets, connections opened before the clock starts, the kernel
alone); the simulator runs the same bytes as bare core streams
(:func:`sim_incast`), with no communicator or envelope on either side.

``program``: a rank program under SocketComm in the emulation and SimComm
in the simulator. The few programs of the default matrix that are not
collectives live here, and are importable by the emulated ranks.
"""

from __future__ import annotations

from typing import Any

__all__ = ["barriers", "sim_incast", "SimRun"]


async def barriers(comm: Any, count: int = 50) -> None:
    """``count`` barriers back to back: latency-bound traffic, no loss."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 100_000:
        raise ValueError(f"count must be a whole number 1..100000, got {count!r}")
    for _ in range(count):
        await comm.barrier()


class SimRun:
    """An incast on the core: finish time, counters and (optionally) the stream trace."""

    def __init__(self, time: float, counters: dict, trace: dict | None):
        self.time = time
        self.counters = counters
        self.trace = trace


def sim_incast(
    platform: dict,
    senders: int,
    nbytes: int,
    *,
    receiver: int = 0,
    seed: int = 1,
    trace: bool = False,
    time_limit_s: float = 3600.0,
) -> SimRun:
    """Hosts ``1..senders`` (skipping ``receiver``) each send ``nbytes`` to ``receiver`` at t = 0.

    The time is when the last byte arrives, as the emulated receiver's clock
    stops when the last sender's data is in.
    """
    from .._core import Simulation
    from ..platform.schema import to_json

    sim = Simulation(to_json(platform), seed)
    if trace:
        sim.enable_trace()
    n = sim.host_count
    tx = [i for i in range(n) if i != receiver][:senders]
    for i in tx:
        sim.send(i, receiver, nbytes)
    last = 0
    while not sim.is_idle:
        done = sim.run_until_completion(time_limit_s)
        if not done:
            break
        last = max([last] + [t for _op, kind, _h, t in done if kind == "arrived"])
    if not sim.is_idle:
        raise RuntimeError(f"the simulated incast did not finish within {time_limit_s:g} simulated seconds")
    return SimRun(last / 1e9, sim.counters(), sim.take_trace() if trace else None)
