"""The parallel heat equation of seed 002 on a small simulated cluster of shared Ethernets.

16 tasks (M = 4) solve a 96 x 96 grid on 4 segments of 4 SPARCstation LX
(4.6 MFlop/s each) joined by a router. Every step each task sends its four
boundaries and updates its interior while they fly. The fused Rust kernel
(``parcomm._core.heat_update``; the numpy kernel gives the same bits)
computes the real temperatures, so the result equals the serial solver bit
for bit; the simulator supplies the time. Then §3.1's model for the same
runs, with B and the per-message cost L fitted from a §5 ping-pong on the
same platform: the paper's form, and the refined shared-segment variant
(the busiest segment carries its messages one after the other).
"""

import statistics

import numpy as np
from parcomm.apps.heat.bench import pairs_program, segment_pairs
from parcomm.apps.heat.decomposition import Decomposition, place, placement_stats, segment_groups
from parcomm.apps.heat.solver import heat_program, solve_serial, summarize
from parcomm.comm import run_sim
from parcomm.models import StencilModel
from parcomm.platform import segments_router

N, M, STEPS = 96, 4, 8
plat = segments_router(4, 4)
groups = segment_groups(plat)
serial = solve_serial(N, STEPS)

# B and L from 10 round trips of one pair on an idle segment (one-way time = 10 RT / 20;
# best of 3 repeats, as the hironaka study does).
sizes = [300, 1000, 3000]
pp = run_sim(pairs_program, plat, 2, hosts=segment_pairs(groups, 1), seed=1, kwargs={"sizes": sizes, "repeats": 3})
B, L = StencilModel.fit_comm(sizes, [t / 20 for t in pp.results[0]["times_s"]])
print(f"ping-pong fit: B = {B:.0f} values/s, L = {L * 1e3:.2f} ms per message")

for how in ("round_robin", "blocks"):
    d = Decomposition(N, M)
    hosts = place(d, groups, how)
    res = run_sim(
        heat_program,
        plat,
        M * M,
        seed=1,
        hosts=hosts,
        kwargs={"N": N, "M": M, "steps": STEPS, "mflops": 4.6, "gather": True, "trace": True},
    )
    s = summarize(res.results, N, STEPS)
    st = placement_stats(d, hosts, groups)
    ends = [max(x["step_end_s"][k] for x in res.results) for k in range(STEPS)]
    median = statistics.median(b - a for a, b in zip([0.0] + ends, ends))
    same = np.array_equal(res.results[0]["field"], serial)
    print(
        f"{how:>11}: {s['time_per_step_s'] * 1e3:6.2f} ms/step (median {median * 1e3:5.2f})  {s['mflops']:5.1f} MFlop/s  "
        f"comm share {s['comm_share']:.2f}  via router {st['crossing_router']:2d} msgs/step  "
        f"busiest segment {st['busiest_segment_messages']} msgs/step  max T {s['max_temperature']:.6f}  "
        f"kernel {s['kernel']}  equals serial: {same}"
    )
    paper = StencilModel(F=4.6e6, B=B)
    refined = StencilModel.shared_segment(F=4.6e6, B_idle=B, latency_s=L, m_seg=st["busiest_segment_messages"])
    print(
        f"{'':>11}  §3.1 model: {paper.step_time(N, M) * 1e3:.2f} ms/step; "
        f"shared-segment model: {refined.step_time(N, M) * 1e3:.2f} ms/step"
    )
