"""The parallel heat equation of seed 002 on a small simulated cluster of shared Ethernets.

16 tasks (M = 4) solve a 96 x 96 grid on 4 segments of 4 SPARCstation LX
(4.6 MFlop/s each) joined by a router. Every step each task sends its four
boundaries and updates its interior while they fly. numpy computes the real
temperatures, so the result equals the serial solver bit for bit; the
simulator supplies the time. Then §3.1's model for the same run.
"""

import numpy as np

from parcomm.apps.heat.decomposition import Decomposition, place, placement_stats, segment_groups
from parcomm.apps.heat.solver import heat_program, solve_serial, summarize
from parcomm.comm import run_sim
from parcomm.models import StencilModel
from parcomm.platform import segments_router

N, M, STEPS = 96, 4, 5
plat = segments_router(4, 4)
groups = segment_groups(plat)
serial = solve_serial(N, STEPS)

for how in ("round_robin", "blocks"):
    hosts = place(Decomposition(N, M), groups, how)
    res = run_sim(heat_program, plat, M * M, seed=1, hosts=hosts,
                  kwargs={"N": N, "M": M, "steps": STEPS, "mflops": 4.6, "gather": True})
    s = summarize(res.results, N, STEPS)
    st = placement_stats(Decomposition(N, M), hosts, groups)
    same = np.array_equal(res.results[0]["field"], serial)
    print(f"{how:>11}: {s['time_per_step_s'] * 1e3:6.2f} ms/step  {s['mflops']:5.1f} MFlop/s  "
          f"comm share {s['comm_share']:.2f}  via router {st['crossing_router']:2d} msgs/step  "
          f"max T {s['max_temperature']:.6f}  equals serial: {same}")

model = StencilModel(F=4.6e6, B=42_000, latency_s=2.0e-3)  # B, latency: fitted by the hironaka study
print(f"§3.1 model (+ 2 ms per message): {model.step_time(N, M) * 1e3:.2f} ms/step, "
      f"{model.performance(N, M) / 1e6:.1f} MFlop/s; limit N->inf {model.limits(N, M)['N->inf'] / 1e6:.1f} MFlop/s")
