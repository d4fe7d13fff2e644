"""``parcomm mcast``: reliable multicast with repair routers (Shimokuni et al.).

Every subcommand reads a tree file (JSON or TOML, the format of
:mod:`parcomm.platform.mcast_tree`).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
from typing import Any

import click

from .common import SEED, IntIn, UserError, emit_json

CONVENTION_HELP = (
    "delay convention: route (the paper's studies 1-4, default), fanout (study 5: all-or-nothing "
    "rounds over a repair domain), coverage (exact rounds until the whole domain has the packet)"
)


def _tree(path: str, repair: str | None = None):
    from ..platform.mcast_tree import TreeError, load, with_repair

    try:
        t = load(path)
        if repair is not None:
            t = with_repair(t, [r for r in (x.strip() for x in repair.split(",")) if r])
    except TreeError as e:
        raise UserError(str(e)) from None
    return t


def _rate(rate: str | None) -> float | None:
    from ..platform.units import parse_rate

    if rate is None:
        return None
    try:
        return parse_rate(rate, "--rate")
    except ValueError as e:
        raise UserError(str(e)) from None


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms"


def _mb(b: float) -> str:
    return f"{b / 1e6:.3f} MB"


@click.group()
def mcast() -> None:
    """Reliable multicast with repair routers (Shimokuni et al.): model, placement, simulation.

    \b
    model   expected delay per receiver and retransmission buffers per repair point
    place   where to put K repair routers (or a buffer budget) to minimize mean delay
    sim     packet-level simulation of the same tree (when the simulator is built)
    """


@mcast.command()
@click.argument("tree_file")
@click.option(
    "--convention",
    type=click.Choice(["route", "fanout", "coverage"]),
    default="route",
    show_default=True,
    help=CONVENTION_HELP,
)
@click.option(
    "--repair", default=None, help="comma-separated routers that repair (overrides the file's flags; '' for none)"
)
@click.option(
    "--rate", default=None, help="stream rate B for the buffers, e.g. 622M (default: the smallest network rate)"
)
@click.option("--serialization", is_flag=True, help="add each packet's transmission time per network to the delays")
@click.option("--json", "as_json", is_flag=True, help="print the full result (every receiver and repair point) as JSON")
def model(
    tree_file: str, convention: str, repair: str | None, rate: str | None, serialization: bool, as_json: bool
) -> None:
    """Expected delay and retransmission buffers for TREE_FILE."""
    from ..models.multicast import analyze

    t = _tree(tree_file, repair)
    try:
        res = analyze(t, convention=convention, rate_bps=_rate(rate), serialization=serialization)
    except ValueError as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json(res.to_dict())
        return
    click.echo(
        f"{t.name}: {len(t.receivers)} receivers, {len(t.routers)} routers, "
        f"{len(res.repair_points) - 1} repair routers, B = {res.rate_bps / 1e6:g} Mbit/s, convention {convention}"
    )
    click.echo(
        f"  delay    mean {_ms(res.mean_delay_s)}  max {_ms(res.max_delay_s)}   (the paper's: reliable delivery over each stretch)"
    )
    click.echo(
        f"  arrival  mean {_ms(res.mean_arrival_s)}  max {_ms(res.max_arrival_s)}   (first arrival at the receiver)"
    )
    click.echo(f"  buffer   system {_mb(res.buffer_total_bytes)}  per device max {_mb(res.buffer_max_bytes)}")
    shown = (
        res.repair_points
        if len(res.repair_points) <= 20
        else sorted(res.repair_points, key=lambda p: -p.buffer_bytes)[:20]
    )
    click.echo(f"  {'repair point':<16} {'RTT':>12} {'buffer':>14} {'frontier':>9} {'receivers':>10}")
    for p in shown:
        click.echo(f"  {p.node:<16} {_ms(p.rtt_s):>12} {_mb(p.buffer_bytes):>14} {p.frontier:>9} {p.receivers:>10}")
    if len(shown) < len(res.repair_points):
        click.echo(f"  ... {len(res.repair_points) - len(shown)} more (the 20 largest buffers shown; --json for all)")


@mcast.command()
@click.argument("tree_file")
@click.option("--routers", "-k", type=IntIn(0), default=None, help="budget: at most K repair routers")
@click.option("--buffer", "buffer", default=None, help="budget: system-wide buffer, e.g. 100MB (1 MB = 10^6 bytes)")
@click.option(
    "--convention",
    type=click.Choice(["route", "fanout", "coverage"]),
    default="route",
    show_default=True,
    help=CONVENTION_HELP,
)
@click.option(
    "--method",
    type=click.Choice(["auto", "dp", "exhaustive", "greedy"]),
    default="auto",
    show_default=True,
    help="auto: exact DP for route, exhaustive search for small trees, else greedy",
)
@click.option("--rate", default=None, help="stream rate B for the buffers (default: the smallest network rate)")
@click.option("--json", "as_json", is_flag=True, help="print the placement and the trade-off curve as JSON")
@click.option(
    "--plot", type=click.Path(dir_okay=False), default=None, help="write the delay/buffer trade-off curve as a PNG"
)
def place(
    tree_file: str,
    routers: int | None,
    buffer: str | None,
    convention: str,
    method: str,
    rate: str | None,
    as_json: bool,
    plot: str | None,
) -> None:
    """Choose repair routers in TREE_FILE for a budget (--routers K or --buffer SIZE)."""
    budget = _budget(routers, buffer)
    t = _tree(tree_file)
    if routers is not None:
        routers = min(routers, len(t.routers))  # "at most K": more than the tree has means every one
    B = _rate(rate)
    want_curve = bool(as_json or plot) or len(t.routers) <= 40
    try:
        best, curve, none, everywhere = _placements(t, routers, budget, convention, method, B, want_curve)
    except ValueError as e:
        raise UserError(str(e)) from None
    if plot:
        _plot(plot, t.name, curve, best, none, everywhere)
    if as_json:
        emit_json(
            {
                "tree": t.name,
                "budget": {"routers": routers, "buffer_bytes": budget},
                "placement": best.to_dict(),
                "no_repair": none.to_dict(),
                "repair_everywhere": everywhere.to_dict(),
                "tradeoff": [
                    dict(
                        k=p.k,
                        mean_delay_s=p.mean_delay_s,
                        buffer_total_bytes=p.buffer_total_bytes,
                        routers=p.routers,
                        method=p.method,
                    )
                    for p in curve
                ],
            }
        )
        return
    what = f"at most {routers} repair routers" if routers is not None else f"a buffer of {_mb(budget or 0)}"
    _print_placement(t.name, what, convention, best, none, everywhere, curve)
    if plot:
        click.echo(f"  plot: {plot}")


def _budget(routers: int | None, buffer: str | None) -> float | None:
    """The buffer budget in bytes (None with --routers); exactly one of the two must be given."""
    from ..platform.units import parse_size

    if (routers is None) == (buffer is None):
        raise UserError("give exactly one budget: --routers K or --buffer SIZE")
    if buffer is None:
        return None
    try:
        return float(parse_size(buffer, "--buffer"))
    except ValueError as e:
        raise UserError(str(e)) from None


def _placements(t, routers: int | None, budget: float | None, convention: str, method: str, B, want_curve: bool):
    """The best placement for the budget, the trade-off curve (when wanted and affordable), and
    the two ends: no repair router, and every router repairing."""
    from ..apps.mcast import placement as P

    best = P.place(t, routers=routers, buffer_bytes=budget, convention=convention, method=method, rate_bps=B)
    # The curve is cheap with the DP ("route") or on small trees; the
    # re-evaluating greedy of other conventions is O(R^2 N), so skip it on large trees.
    cheap = (convention == "route" and method in ("auto", "dp")) or len(t.routers) <= 40
    curve = (
        P.tradeoff(
            t,
            convention=convention,
            method=method if method != "exhaustive" or len(t.routers) <= 16 else "auto",
            rate_bps=B,
        )
        if (want_curve and cheap)
        else []
    )
    none = P.evaluate(t, [], convention=convention, rate_bps=B)
    everywhere = P.evaluate(t, t.routers, convention=convention, rate_bps=B)
    return best, curve, none, everywhere


def _print_placement(name: str, what: str, convention: str, best, none, everywhere, curve) -> None:
    click.echo(f"{name}: best placement for {what} ({best.method}, convention {convention})")
    names = ", ".join(best.routers[:30]) + (f", ... ({best.k} in all)" if best.k > 30 else "")
    click.echo(f"  repair at    {names or '(none: the source alone, Comet RM)'}")
    for label, p in (("chosen", best), ("no repair", none), ("everywhere", everywhere)):
        click.echo(
            f"  {label:<12} mean delay {_ms(p.mean_delay_s)}  max {_ms(p.max_delay_s)}  buffer {_mb(p.buffer_total_bytes)} "
            f"(max {_mb(p.buffer_max_bytes)}), k = {p.k}"
        )
    if curve:
        click.echo(f"  trade-off ({curve[0].method}): k, mean delay, system buffer")
        for p in curve:
            click.echo(f"    {p.k:>4}  {_ms(p.mean_delay_s):>12}  {_mb(p.buffer_total_bytes):>14}")


def _plot(path: str, name: str, curve, best, none, everywhere) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    if curve:
        ax.plot(
            [p.buffer_total_bytes / 1e6 for p in curve],
            [p.mean_delay_s * 1e3 for p in curve],
            ".-",
            label=f"best for each k ({curve[0].method})",
        )
    for label, p, m in (("no repair", none, "s"), ("everywhere", everywhere, "^"), (f"chosen (k={best.k})", best, "o")):
        ax.plot([p.buffer_total_bytes / 1e6], [p.mean_delay_s * 1e3], m, ms=8, label=label)
    ax.set_xlabel("system-wide retransmission buffer (MB)")
    ax.set_ylabel("mean expected delay (ms)")
    ax.set_title(f"{name}: delay/buffer trade-off")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise UserError(f"--plot {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


@mcast.command(context_settings={"ignore_unknown_options": False})
@click.argument("tree_file")
@click.option("--seed", type=SEED, default=1, show_default=True, help="random seed (same seed, same result)")
@click.option("--repair", default=None, help="comma-separated routers that repair (overrides the file's flags)")
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="any other keyword argument of parcomm.apps.mcast.sim.simulate (value parsed as JSON if it can be)",
)
@click.option("--json", "as_json", is_flag=True, help="print the full result as JSON")
def sim(tree_file: str, seed: int, repair: str | None, settings: tuple[str, ...], as_json: bool) -> None:
    """Simulate TREE_FILE packet by packet (parcomm.apps.mcast.sim.simulate)."""
    from ..apps.mcast.sim import simulate

    t = _tree(tree_file, repair)
    kwargs: dict[str, Any] = {"seed": seed}
    for s in settings:
        key, eq, value = s.partition("=")
        if not eq or not key:
            raise UserError(f"--set {s!r}: expected KEY=VALUE")
        try:
            kwargs[key] = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            kwargs[key] = value
        except ValueError:  # an integer of thousands of digits
            raise UserError(f"--set {key}: {value[:40]!r}... is not a sensible value") from None
        _check_setting(key, kwargs[key])
    params = inspect.signature(simulate).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = [k for k in kwargs if k not in params]
        if unknown:
            raise UserError(f"simulate() takes no argument {unknown[0]!r} (it takes: {', '.join(list(params)[1:])})")
    try:
        res = simulate(t.to_dict(), **kwargs)
    except (ValueError, TypeError) as e:
        raise UserError(f"simulate: {e}") from None
    out = as_plain(res, full=as_json)
    if as_json:
        emit_json(out)
    elif isinstance(out, dict):
        for k, v in out.items():
            if isinstance(v, dict) and all(not isinstance(x, (list, dict)) for x in v.values()):
                for kk, x in v.items():
                    click.echo(f"{k}.{kk}: {x}")
            elif not isinstance(v, (list, dict)):
                click.echo(f"{k}: {v}")
    else:
        click.echo(out)


#: ``--set packets=N``: the simulator keeps per-packet state (about 40 bytes each); ten million
#: packets (10 GB of 1 KiB packets, 80 s of a 1 Gbit/s stream) is 400 MB of it.
MAX_SIM_PACKETS = 10_000_000


def _check_setting(key: str, value: Any) -> None:
    """Refuse the --set values that would reach the core as a crash rather than an error."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"--set {key}={value}: must be a finite number")
    if isinstance(value, int) and not -(2**63) <= value < 2**64:  # the core's integers are 64-bit
        raise UserError(f"--set {key}: {str(value)[:30]}... is out of any sensible range")
    if key == "packets" and isinstance(value, (int, float)) and not isinstance(value, bool) and value > MAX_SIM_PACKETS:
        raise UserError(f"--set packets={value}: at most {MAX_SIM_PACKETS} packets per run")


def as_plain(res: Any, full: bool = False) -> Any:
    """A simulator result as plain data: its summary() (or to_dict() when
    ``full``), its dataclass fields, or itself."""
    for attr in ("to_dict", "summary") if full else ("summary", "to_dict"):
        f = getattr(res, attr, None)
        if callable(f):
            return f()
    if dataclasses.is_dataclass(res) and not isinstance(res, type):
        return dataclasses.asdict(res)
    return res


__all__ = ["mcast", "as_plain"]
