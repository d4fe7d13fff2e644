"""Where should a multicast tree retransmit? (seed 003, Shimokuni et al.)

Loads a small wide-area tree (three_sites.toml), prints the model's expected
delay and retransmission buffers with no repair router (Comet RM), with
repair at the backbone/LAN boundaries (the paper's recommendation) and at
every router, then asks the optimizer for the best placement under a
router budget and under a buffer budget, and prints the trade-off curve.
Everything here is the closed-form model, so the output is exact and
deterministic.
"""

from pathlib import Path

from parcomm.apps.mcast import load, placement
from parcomm.models.multicast import analyze

tree = load(Path(__file__).with_name("three_sites.toml"))
print(tree)


def show(label, routers):
    m = analyze(tree, repair=routers)
    print(
        f"{label:<12} mean delay {m.mean_delay_s * 1e3:8.3f} ms  (first arrival {m.mean_arrival_s * 1e3:7.3f} ms)"
        f"  buffer {m.buffer_total_bytes / 1e6:6.3f} MB  repair at {', '.join(routers) or '-'}"
    )


boundary = placement.boundary_routers(tree)
show("none", [])
show("boundaries", boundary)
show("everywhere", tree.routers)

print("per receiver, repair at the boundaries:")
for r in analyze(tree, repair=boundary).receivers:
    print(f"  {r.receiver}: {r.delay_s * 1e3:8.3f} ms via {' > '.join(r.repair_points)}")

for k in (1, 2):
    p = placement.place(tree, routers=k)
    print(
        f"best with k = {k}: {', '.join(p.routers)}  {p.mean_delay_s * 1e3:.3f} ms, {p.buffer_total_bytes / 1e6:.3f} MB ({p.method})"
    )
p = placement.place(tree, buffer_bytes=13e6)
print(
    f"best within 13 MB: {', '.join(p.routers)}  {p.mean_delay_s * 1e3:.3f} ms, {p.buffer_total_bytes / 1e6:.3f} MB ({p.method})"
)

print("trade-off (exact DP): k, mean delay, system buffer, routers")
for p in placement.tradeoff(tree):
    print(
        f"  {p.k}  {p.mean_delay_s * 1e3:8.3f} ms  {p.buffer_total_bytes / 1e6:7.3f} MB  {', '.join(p.routers) or '-'}"
    )
