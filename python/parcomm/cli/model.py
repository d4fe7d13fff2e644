"""``parcomm measure`` and ``parcomm model``: parameters, predictions, selection."""

from __future__ import annotations

import math
from pathlib import Path

import click

from ..platform.schema import MAX_HOSTS
from ..platform.units import parse_duration, parse_size
from .common import SEED, IntIn, UserError, emit_json, parse_with

#: Ranks a model predicts for: a million, more than most machines have cores. The models'
#: cost grows with it (Alltoall B sums P - 1 phases: 2.4 s at 2^20 ranks, 34 s at 2^24).
MAX_MODEL_PROCS = 1 << 20
#: Ranks ``measure`` starts: one per host of the largest platform.
MAX_MEASURE_PROCS = MAX_HOSTS


def _sizes(text: str) -> list[int]:
    return [parse_size(s.strip(), "--sizes") for s in text.split(",") if s.strip()]


def _rel_ci(ctx, param, value: float) -> float:
    # a fraction of the mean; repetitions stop at max_reps anyway, but NaN, inf or <= 0 mean nothing
    if not (0 < value < math.inf):
        raise click.BadParameter(f"{value} is not a positive fraction of the mean (e.g. 0.05)")
    return value


def _pattern_ks(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        ks = [int(k) for k in text.split(",")]
    except ValueError:
        raise click.UsageError(f"--pattern-ks: {text[:60]!r} is not a comma-separated list of integers") from None
    bad = [k for k in ks if not 1 <= k < MAX_MEASURE_PROCS]
    if bad:
        raise click.UsageError(f"--pattern-ks: {bad[0]} is not an XOR partner distance 1..{MAX_MEASURE_PROCS - 1}")
    return ks


@click.command()
@click.option("--backend", type=click.Choice(["sim", "local", "mpi"]), default="sim", show_default=True,
              help="sim: a simulated platform; local: TCP processes on this machine; mpi: ranks under mpiexec")
@click.option("--platform", "platform_spec", default="opteron:8", show_default=True,
              help="simulated platform to measure (short form or TOML file; --backend sim)")
@click.option("--procs", "-n", type=IntIn(1, MAX_MEASURE_PROCS), default=None,
              help="ranks (default: every host)")
@click.option("--sizes", default="0,64,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB", show_default=True,
              help="message sizes at which g, o_s and o_r are measured")
@click.option("--patterns", type=click.Choice(["alltoall", "none"]), default="alltoall", show_default=True,
              help="measure g(m, C) for the XOR patterns Alltoall A and B use (eq. 3)")
@click.option("--pattern-ks", default=None, help="measure only these XOR patterns, e.g. 1,2,4 (others by symmetry)")
@click.option("--rel-ci", type=float, default=0.05, show_default=True, callback=_rel_ci,
              help="repeat until the 95%% confidence interval is within this fraction of the mean")
@click.option("--rto", default="200ms", show_default=True, help="T_RTO of the platform's TCP (RTO minimum)")
@click.option("--seed", type=SEED, default=1, show_default=True, help="seed of the simulated platform's random streams")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="parameter file to write (JSON)")
def measure(backend, platform_spec, procs, sizes, patterns, pattern_ks, rel_ci, rto, seed, out) -> None:
    """Measure PlogP and PlogP-BR parameters (Kielmann's procedure, bidirectional
    g(m, C) of Nomura & Ishikawa §3.3, switch queue q of §3.1).

    The procedure is a set of rank programs; the simulator, local TCP
    processes and MPI run them unchanged.
    """
    from rich.console import Console

    from ..measure import measure as do_measure, sim_runner
    from ..platform import as_platform

    size_list = parse_with(_sizes, sizes, "--sizes")
    rto_s = parse_with(lambda v: parse_duration(v, "--rto", require_unit=True), rto, "--rto")
    ks = _pattern_ks(pattern_ks)
    try:
        if backend == "sim":
            plat = as_platform(platform_spec)
            n = procs or len(plat["hosts"])
            fc = any(s.get("flow_control") for s in plat.get("switches", []))
            runner = sim_runner(plat, n, seed)
        else:
            if not procs:
                raise ValueError(f"--backend {backend} needs --procs")
            n, fc = procs, False
            if backend == "local":
                from ..comm.launch import local_runner

                runner = local_runner(n, timeout=120)
            else:
                from ..comm.mpi import mpi_runner

                runner = mpi_runner(n, timeout=120)
        con = Console(stderr=True)
        with con.status("measuring") as status:
            params = do_measure(runner, n, size_list, patterns=patterns, pattern_ks=ks,
                                rel_ci=rel_ci, rto_s=rto_s, flow_control=fc, progress=status.update,
                                meta={"platform": platform_spec if backend == "sim" else backend,
                                      "backend": backend, "seed": seed})
        params.save(out)
    except (ValueError, OSError) as e:
        raise UserError(str(e)) from None
    except Exception as e:  # a real backend failed (e.g. a rank died): say so in one line
        from ..comm import CommError

        if isinstance(e, CommError):
            raise UserError(f"measurement failed on backend {backend}: {e}") from None
        raise
    q = params.queue_bytes
    overflowed = params.meta.get("queue_overflow_seen")
    bound = " (a lower bound: the flood never overflowed the port)" if overflowed is False else ""
    con.print(f"L = {params.L * 1e6:.2f} us, g(0) = {params.g[0] * 1e6:.2f} us, "
              f"q = {q if q is None else round(q)} B{bound}; wrote {out}")


@click.group()
def model() -> None:
    """Predict collective times with closed-form models and pick the fastest algorithm.

    \b
    Models: hockney, logp, loggp, plogp, plogp-br (Nomura & Ishikawa).
    Example:
      parcomm measure --platform opteron:64 --out measured.json
      parcomm model select alltoall --params measured.json --procs 64 --size 64KiB
    """


def _load(params_path: Path):
    from ..models import PlogPParams

    try:
        return PlogPParams.load(params_path)
    except ValueError as e:
        raise UserError(str(e)) from None


#: ``model select``'s model when none is given, and why, as the command says it.
DEFAULT_SELECT_MODEL = "plogp-br"
DEFAULT_SELECT_WHY = ("the default: it models RTO penalties, so it ranks algorithms best in the nomura study; "
                      "its absolute times are less accurate than PlogP's")

_params_opt = click.option("--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
                           help="parameter file written by `parcomm measure`")


@model.command()
@click.argument("collective", type=click.Choice(["alltoall", "bcast", "barrier"]))
@_params_opt
@click.option("--procs", "-n", type=IntIn(1, MAX_MODEL_PROCS), required=True, help="ranks P")
@click.option("--size", default="64KiB", show_default=True, help="message size m per rank pair (64KiB, 1MB, ...)")
@click.option("--model", "model_name", default=None,
              help="hockney, logp, loggp, plogp or plogp-br [default: plogp-br, see below]")
@click.option("--json", "as_json", is_flag=True, help="print the choice and every predicted time as JSON")
def select(collective, params_path, procs, size, model_name, as_json) -> None:
    """The fastest algorithm for COLLECTIVE under a model, with every algorithm's predicted time.

    The default model is PlogP-BR because it is the one that sees retransmission timeouts: in
    the nomura study (`parcomm repro nomura`) it picks the faster of Alltoall A and B more
    often than PlogP, where an incast makes A pay RTOs. Its absolute times are far less
    accurate (PlogP is closer there), so use `parcomm model predict` to compare times.
    """
    from ..models import select as do_select

    params = _load(params_path)
    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    why = "chosen with --model"
    if model_name is None:
        model_name, why = DEFAULT_SELECT_MODEL, DEFAULT_SELECT_WHY
    try:
        best, times = do_select(collective, params, procs, nbytes, model_name)
    except ValueError as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json({"collective": collective, "model": model_name, "model_reason": why, "procs": procs,
                   "size_bytes": nbytes, "best": best, "predicted_s": times})
        return
    click.echo(f"{collective}, {procs} procs, {nbytes} B, model {model_name} ({why}):")
    for algo, t in sorted(times.items(), key=lambda kv: kv[1]):
        click.echo(f"  {algo:26} {t * 1e3:12.4f} ms{'   <- fastest' if algo == best else ''}")


@model.command()
@click.argument("algorithm")
@_params_opt
@click.option("--procs", "-n", type=IntIn(1, MAX_MODEL_PROCS), required=True, help="ranks P")
@click.option("--size", default="64KiB", show_default=True, help="message size m per rank pair (64KiB, 1MB, ...)")
@click.option("--json", "as_json", is_flag=True, help="print every model's prediction as JSON")
def predict(algorithm, params_path, procs, size, as_json) -> None:
    """Predicted time of ALGORITHM (alltoall_a, alltoall_b, bcast_binomial,
    bcast_scatter_allgather, barrier; or A, B) under every model."""
    from ..models import MODELS, make_model

    params = _load(params_path)
    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    times, missing = {}, {}
    for name in MODELS:
        try:
            times[name] = make_model(name, params).predict(algorithm, procs, nbytes)
        except ValueError as e:
            missing[name] = str(e)
    if not times:  # the same error for every model (bad algorithm, bad P): say it once
        raise UserError(next(iter(missing.values())))
    if as_json:
        emit_json({"algorithm": algorithm, "procs": procs, "size_bytes": nbytes, "predicted_s": times,
                   "unavailable": missing})
        return
    for name, t in times.items():
        click.echo(f"  {name:10} {t * 1e3:12.4f} ms")
    for name, why in missing.items():  # e.g. PlogP-BR from a file without q
        click.echo(f"  {name:10} {'n/a':>12}    ({why})")
