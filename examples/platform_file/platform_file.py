"""A platform described as data (cluster.toml), and the two broadcasts on it.

For a large message, scatter + allgather moves about 2m bytes per rank and
wins over the binomial tree's m·log2(P) once the message is large.
"""

from pathlib import Path

from parcomm.collectives import bcast_binomial, bcast_scatter_allgather
from parcomm.comm import run_sim
from parcomm.platform import load

platform = load(Path(__file__).with_name("cluster.toml"))
print(f"{platform['name']}: {len(platform['hosts'])} hosts, {len(platform['switches'])} switches")
for nbytes in (1024, 1 << 20, 16 << 20):
    row = [f"{nbytes:>9} B"]
    for algo in (bcast_binomial, bcast_scatter_allgather):
        res = run_sim(algo, platform, seed=1, kwargs={"nbytes": nbytes})
        row.append(f"{algo.__name__} {res.time * 1e3:9.3f} ms")
    print("  ".join(row))
