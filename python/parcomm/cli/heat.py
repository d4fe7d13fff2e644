"""``parcomm heat``: the parallel 2D heat equation of Hironaka (solver, model, §5 benchmarks)."""

from __future__ import annotations

import time
from typing import Any

import click

from ..platform.units import parse_size
from .common import Duration, UserError, emit_json, parse_with

PROGRAM = "parcomm.apps.heat.solver:heat_program"


def _print(title: str, summary: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, show_header=False)
    t.add_column(overflow="fold")  # wrap, never cut a value
    t.add_column(overflow="fold")
    for k, v in summary.items():
        t.add_row(k, f"{v:.6g}" if isinstance(v, float) else str(v))
    Console().print(t)


@click.group()
def heat() -> None:
    """Parallel 2D heat equation on M x M tasks (Hironaka): run, model, benchmark.

    \b
    Examples:
      parcomm heat run --backend sim -N 330 -M 11 --steps 20 --platform segments:16
      parcomm heat run --backend mpi -N 64 -M 2 --steps 100
      parcomm heat model -N 330,660,1320,2640 -M 11
      parcomm heat bench --pairs 1,2,4 --where segment
    """


@heat.command("run")
@click.option(
    "--backend",
    type=click.Choice(["serial", "sim", "mpi", "local"]),
    default="sim",
    show_default=True,
    help="serial: one process; sim: simulated platform; mpi: M*M ranks under mpiexec; local: TCP processes",
)
@click.option("-N", "--grid", "N", type=int, default=330, show_default=True, help="grid points per side (N x N)")
@click.option(
    "-M", "--tasks", "M", type=int, default=11, show_default=True, help="tasks per side (M x M ranks); M must divide N"
)
@click.option("--steps", type=int, default=10, show_default=True, help="time steps to run")
@click.option("--r", "r", type=float, default=0.2, show_default=True, help="alpha*dt/h^2 (stable up to 0.25)")
@click.option(
    "--init",
    type=click.Choice(["patch", "sine"]),
    default="patch",
    show_default=True,
    help="patch: heat on a square of the domain (the paper); sine: the lowest eigenmode",
)
@click.option(
    "--platform",
    "platform_spec",
    default="segments:16",
    show_default=True,
    help="simulated platform (short form or TOML file; --backend sim)",
)
@click.option(
    "--placement",
    type=click.Choice(["linear", "round_robin", "blocks"]),
    default="linear",
    show_default=True,
    help="tasks on hosts (--backend sim): in host order, dealt round-robin over segments, or blocks per segment",
)
@click.option(
    "--mflops",
    type=float,
    default=4.6,
    show_default=True,
    help="simulated CPU speed per host, MFlop/s (SPARCstation LX, Hironaka, Table 1; --backend sim)",
)
@click.option(
    "--overlap/--no-overlap",
    default=True,
    show_default=True,
    help="update the interior while the boundary messages fly",
)
@click.option(
    "--kernel",
    type=click.Choice(["auto", "rust", "numpy"]),
    default="auto",
    show_default=True,
    help="grid update: the fused Rust kernel (auto: when built) or the numpy reference; same bits",
)
@click.option("--seed", type=int, default=1, show_default=True, help="seed of the simulation's random streams")
@click.option(
    "--timeout",
    type=Duration(),
    default="300s",
    show_default=True,
    help="time limit of a real run, with a unit: 90s, 10min (--backend mpi/local)",
)
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON on stdout")
def run_cmd(
    backend, N, M, steps, r, init, platform_spec, placement, mflops, overlap, kernel, seed, timeout, as_json
) -> None:
    """Solve for STEPS steps; report time per step, MFlop/s, communication share and the maximum temperature."""
    from ..apps.heat.decomposition import Decomposition, place, segment_groups
    from ..apps.heat.kernel import FLOPS_PER_POINT, HeatKernel, StabilityError, check_r
    from ..apps.heat.solver import solve_serial, summarize
    from ..comm import CommError

    if steps < 0:
        raise UserError(f"--steps must be >= 0, got {steps}")
    try:
        check_r(r)
        d = Decomposition(N, 1 if backend == "serial" else M)
    except (StabilityError, ValueError) as e:
        raise UserError(str(e)) from None
    kw = {"N": N, "M": d.M, "steps": steps, "r": r, "init": init, "overlap": overlap, "kernel": kernel}
    summary: dict[str, Any] = {"backend": backend}
    try:
        if backend == "serial":
            t0 = time.perf_counter()
            field = solve_serial(N, steps, r, init, kernel)
            wall = time.perf_counter() - t0
            summary.update(
                {
                    "N": N,
                    "tasks": 1,
                    "steps": steps,
                    "time_s": wall,
                    "time_per_step_s": wall / steps if steps else 0.0,
                    "mflops": FLOPS_PER_POINT * N * N * steps / wall / 1e6 if wall > 0 else float("nan"),
                    "comm_share": 0.0,
                    "max_temperature": float(field.max()),
                    "kernel": HeatKernel((3, 3), r, backend=kernel).backend,
                }
            )
        elif backend == "sim":
            from ..comm import run_sim
            from ..platform import as_platform

            plat = as_platform(platform_spec)
            hosts = place(d, segment_groups(plat), placement)
            res = run_sim(_program(), plat, d.tasks, seed=seed, hosts=hosts, kwargs={**kw, "mflops": mflops})
            summary.update(
                {
                    "platform": platform_spec,
                    "placement": placement,
                    "mflops_per_host": mflops,
                    **summarize(res.results, N, steps),
                    "events": res.events,
                    "wall_s": round(res.wall_s, 3),
                    **res.host_totals(),
                }
            )
        else:
            if backend == "mpi":
                from ..comm import run_mpi as runner
            else:
                from ..comm import run_local as runner
            res = runner(PROGRAM, d.tasks, kwargs=kw, timeout=timeout)
            summary.update({**summarize(res.results, N, steps), "wall_s": round(res.wall_s, 3)})
    except (CommError, ValueError, OSError) as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json(summary)
    else:
        _print(f"heat: N={N}, M={d.M}, {steps} steps", summary)


def _program():
    """The rank program itself (the simulator needs the object, not its name)."""
    from ..apps.heat.solver import heat_program

    return heat_program


def _ints(text: str, option: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{option}: expected comma-separated integers, got {text!r}") from None
    if not vals or any(v < 1 for v in vals):
        raise ValueError(f"{option}: expected positive integers, got {text!r}")
    return vals


@heat.command("model")
@click.option("-N", "--grid", "N", default="330,660,1320,2640", show_default=True, help="grid sizes (comma-separated)")
@click.option("-M", "--tasks", "M", type=int, default=11, show_default=True, help="tasks per side")
@click.option("--mflops", type=float, default=4.6, show_default=True, help="F: MFlop/s per host")
@click.option(
    "--bandwidth",
    type=float,
    default=None,
    help="B: boundary values (8 bytes) per second per task; default: fitted from a simulated ping-pong",
)
@click.option(
    "--latency", default=None, help="fixed cost per message, e.g. 2ms; default: fitted (0 gives §3.1 exactly)"
)
@click.option(
    "--platform",
    "platform_spec",
    default="segments:16",
    show_default=True,
    help="platform whose ping-pong fits B and the latency when they are not given",
)
@click.option(
    "--flops-per-point", "C", type=float, default=6.0, show_default=True, help="C: operations per point and step"
)
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON on stdout")
def model_cmd(N, M, mflops, bandwidth, latency, platform_spec, C, as_json) -> None:
    """§3.1's model: step time CN^2/(FM^2) + 4N/(BM), performance M^2F/(1 + 4FM/(CBN)), Table 3's limits."""
    from ..models.stencil import StencilModel
    from ..platform.units import parse_duration

    Ns = parse_with(lambda v: _ints(v, "-N"), N, "-N")
    try:
        lat = parse_duration(latency, "--latency", require_unit=True) if latency is not None else None
        fit = None
        if bandwidth is None or lat is None:
            fit = fit_from_pingpong(platform_spec)
        B = bandwidth if bandwidth is not None else fit["B"]
        L = lat if lat is not None else fit["latency_s"]
        m = StencilModel(F=mflops * 1e6, B=B, C=C, latency_s=L)
    except (ValueError, OSError) as e:
        raise UserError(str(e)) from None
    rows = [
        {
            "N": n,
            "M": M,
            "step_s": m.step_time(n, M),
            "mflops": m.performance(n, M) / 1e6,
            "paper_form_mflops": m.paper_form().performance(n, M) / 1e6,
            "comm_share": m.comm_share(n, M),
            **{f"limit_{k}_mflops": v / 1e6 for k, v in m.limits(n, M).items()},
        }
        for n in Ns
    ]
    out = {"F": m.F, "B_values_per_s": m.B, "C": m.C, "latency_s": m.latency_s, "fit": fit, "rows": rows}
    if as_json:
        emit_json(out)
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(
        title=f"§3.1 model: F={m.F / 1e6:g} MFlop/s, B={m.B:.4g} values/s, C={m.C:g}, latency={m.latency_s * 1e3:.3g} ms"
    )
    for col in ("N", "M", "step (ms)", "MFlop/s", "§3.1 form MFlop/s", "comm share", "N->inf", "F->inf"):
        t.add_column(col, justify="right", overflow="fold")
    for x in rows:
        t.add_row(
            str(x["N"]),
            str(x["M"]),
            f"{x['step_s'] * 1e3:.2f}",
            f"{x['mflops']:.1f}",
            f"{x['paper_form_mflops']:.1f}",
            f"{x['comm_share']:.2f}",
            f"{x['limit_N->inf_mflops']:.0f}",
            f"{x['limit_F->inf_mflops']:.0f}",
        )
    Console().print(t)


#: Message sizes (bytes) of the ping-pong that fits B and the per-message cost:
#: the boundary messages of the Fig. 3 sweep are 240..1920 bytes.
FIT_SIZES = (256, 512, 1024, 2048, 4096)


def fit_from_pingpong(platform: Any, sizes=FIT_SIZES, seed: int = 1) -> dict[str, Any]:
    """One pair on one segment of the simulated platform, 10 round trips per
    size (best of 3); one-way time = round trip / 2; returns the fitted
    B (values/s), latency and the points."""
    from ..apps.heat.bench import pairs_program, segment_pairs
    from ..apps.heat.decomposition import segment_groups
    from ..comm import run_sim
    from ..models.stencil import StencilModel
    from ..platform import as_platform

    plat = as_platform(platform)
    hosts = segment_pairs(segment_groups(plat), 1)
    res = run_sim(
        pairs_program, plat, 2, hosts=hosts, seed=seed, kwargs={"sizes": list(sizes), "npairs": 1, "repeats": 3}
    )
    one_way = [t / 10 / 2 for t in res.results[0]["times_s"]]
    B, L = StencilModel.fit_comm(list(sizes), one_way)
    return {"B": B, "latency_s": L, "sizes": list(sizes), "one_way_s": one_way}


@heat.command("bench")
@click.option(
    "--backend",
    type=click.Choice(["sim", "local", "mpi"]),
    default="sim",
    show_default=True,
    help="sim: the simulated segments and router; local: TCP processes here; mpi: ranks under MPI",
)
@click.option(
    "--platform", "platform_spec", default="segments:16", show_default=True, help="simulated platform (--backend sim)"
)
@click.option(
    "--where",
    type=click.Choice(["segment", "router"]),
    default="segment",
    show_default=True,
    help="segment: all pairs inside one segment (Fig. 5); router: each pair across two segments (Fig. 6)",
)
@click.option("--pairs", default="1,2,4", show_default=True, help="numbers of concurrent pairs")
@click.option("--sizes", default="16,100,300,1000,3000,10000", show_default=True, help="message sizes")
@click.option(
    "--repeats", type=int, default=3, show_default=True, help="measurements of 10 round trips per size (best kept)"
)
@click.option("--seed", type=int, default=1, show_default=True, help="seed of the simulation's random streams")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON on stdout")
def bench_cmd(backend, platform_spec, where, pairs, sizes, repeats, seed, as_json) -> None:
    """§5: time of 10 round trips per message size with k concurrent pairs (Figs. 5 and 6)."""
    from ..apps.heat.bench import cross_segment_pairs, pairs_program, segment_pairs
    from ..apps.heat.decomposition import segment_groups
    from ..comm import CommError

    ks = parse_with(lambda v: _ints(v, "--pairs"), pairs, "--pairs")
    size_list = parse_with(
        lambda v: [parse_size(s.strip(), "--sizes") for s in v.split(",") if s.strip()], sizes, "--sizes"
    )
    if repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {repeats}")
    rows = []
    try:
        for k in ks:
            kw = {"sizes": size_list, "npairs": k, "repeats": repeats}
            if backend == "sim":
                from ..comm import run_sim
                from ..platform import as_platform

                plat = as_platform(platform_spec)
                groups = segment_groups(plat)
                hosts = segment_pairs(groups, k) if where == "segment" else cross_segment_pairs(groups, k)
                res = run_sim(pairs_program, plat, 2 * k, hosts=hosts, seed=seed, kwargs=kw)
            else:
                from ..comm import run_local, run_mpi

                runner = run_mpi if backend == "mpi" else run_local
                res = runner("parcomm.apps.heat.bench:pairs_program", 2 * k, kwargs=kw)
            per_pair = [x for x in res.results if x]
            for i, m in enumerate(size_list):
                worst = max(x["times_s"][i] for x in per_pair)
                rows.append(
                    {
                        "pairs": k,
                        "size_bytes": m,
                        "time_10rt_s": worst,
                        "mean_10rt_s": max(x["mean_s"][i] for x in per_pair),
                    }
                )
    except (CommError, ValueError, OSError) as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json({"backend": backend, "where": where, "rows": rows})
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"10 round trips, {where} ({backend}); slowest pair, best of {repeats}")
    t.add_column("size (B)", justify="right", overflow="fold")
    for k in ks:
        t.add_column(f"{k} pair{'s' if k > 1 else ''} (ms)", justify="right", overflow="fold")
    for m in size_list:
        t.add_row(
            str(m),
            *[
                f"{next(x['time_10rt_s'] for x in rows if x['pairs'] == k and x['size_bytes'] == m) * 1e3:.1f}"
                for k in ks
            ],
        )
    Console().print(t)
