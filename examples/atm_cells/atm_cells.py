"""99 hosts of the ATM cluster each send 64 KiB to host 0 at once (seed 000).

The AN1000 switches cells: the first frames of all 99 senders reach h0's
port together, and once its 2048 cells are full every frame still arriving
loses cells and fails AAL5 at h0. The store-and-forward model
(``cell_interleaving=False``, the default) admits ten whole frames of that
burst instead. With the Solaris RTO of every node (MIN 200 ms, MAX 60 s) the
retransmissions through a cell switch collide again every time and nothing
gets through; per-node random RTOs (seed 000 §5.2, Fig. 6: MIN in
250..350 ms) break the synchronization.
"""

import json

from parcomm import _core
from parcomm.platform import apply_rto, atm_cluster

N, NBYTES, LIMIT_S = 100, 64 * 1024, 600.0


def simulation(rto, cell_interleaving):
    platform = atm_cluster(N, cell_interleaving=cell_interleaving)
    if rto == "random_min":
        platform = apply_rto(platform, "random_min", 0.25, seed=1)
    sim = _core.Simulation(json.dumps(platform), 0)
    ops = {sim.send(i, 0, NBYTES) for i in range(1, N)}
    return sim, ops


def to_h0(sim):
    c = sim.counters()
    port = c["ports"]["name"].index("sw0->h0")
    return c["ports"]["drops"][port], c["ports"]["cell_drops"][port], sum(c["hosts"]["corrupt_discards"]), c


print("The first burst (99 frames of 192 cells, the first 20 ms):")
print("switch  whole  corrupt  refused  cell_drops")
for cell_interleaving in (False, True):
    sim, _ = simulation("solaris", cell_interleaving)
    sim.run_until(0.02)  # before any ACK lets a sender send more
    drops, cell_drops, corrupt, _ = to_h0(sim)
    print(
        f"{'cells' if cell_interleaving else 'frames':6}  {N - 1 - drops:5}  {corrupt:7}  {drops - corrupt:7}  {cell_drops:10}"
    )

print()
print("To the end (or 600 s simulated):")
print("rto         switch  arrived  completion  drops  cell_drops  corrupt  timeouts")
for rto in ("solaris", "random_min"):
    for cell_interleaving in (False, True):
        sim, ops = simulation(rto, cell_interleaving)
        arrived, last = 0, None
        while arrived < len(ops):
            done = sim.run_until_completion(LIMIT_S)
            if not done:
                break
            for op, kind, _, t in done:
                if kind == "arrived" and op in ops:
                    arrived, last = arrived + 1, t
        drops, cell_drops, corrupt, c = to_h0(sim)
        end = f"{last / 1e9:9.3f}s" if arrived == len(ops) else f">{LIMIT_S:g}s".rjust(10)
        print(
            f"{rto:10}  {'cells' if cell_interleaving else 'frames':6}  {arrived:7}  {end}  {drops:5}"
            f"  {cell_drops:10}  {corrupt:7}  {sum(c['hosts']['timeouts']):8}"
        )
