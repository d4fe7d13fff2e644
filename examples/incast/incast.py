"""TCP incast: N ranks send 256 KiB each to rank 0 through a 32 KiB switch port.

Lost tail segments wait for a retransmission timeout, so goodput collapses
with the classic 200 ms RTO minimum and recovers with a 1 ms one
(the phenomenon behind seed 000's RTO tuning).
"""

from parcomm.collectives import gather_linear
from parcomm.comm import run_sim
from parcomm.platform import set_rto, star

NBYTES = 256 * 1024
print("senders  rto_min  goodput(Mbit/s)  timeouts  drops")
for rto_min in (0.2, 0.001):
    for senders in (1, 4, 16):
        platform = set_rto(star(senders + 1, buffer="32KiB"), rto_min_s=rto_min)
        res = run_sim(gather_linear, platform, seed=1, kwargs={"nbytes": NBYTES})
        goodput = senders * NBYTES * 8 / res.time / 1e6
        print(
            f"{senders:7}  {rto_min * 1e3:5g}ms  {goodput:15.1f}  {res.host_totals()['timeouts']:8}  {res.port_drops():5}"
        )
