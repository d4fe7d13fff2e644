"""``parcomm measure`` and ``parcomm model``: parameters, predictions, selection."""

from __future__ import annotations

import math
import tempfile
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


#: Backends that build the --platform (the others are this machine's processes).
EMULATED_OR_SIMULATED = ("sim", "emu", "emu-mpi")


def _measure_runner(held, backend: str, platform_spec: str, procs: int | None, seed: int):
    """(runner, ranks, flow control) for ``parcomm measure``; an emulated cluster and
    hydra's scratch directory are released by ``held`` (an ExitStack)."""
    if backend not in EMULATED_OR_SIMULATED:
        if not procs:
            raise ValueError(f"--backend {backend} needs --procs")
        if backend == "local":
            from ..comm.launch import local_runner

            return local_runner(procs, timeout=120), procs, False
        from ..comm.mpi import mpi_runner

        return mpi_runner(procs, timeout=120), procs, False
    from ..platform import as_platform

    plat = as_platform(platform_spec)
    n = procs or len(plat["hosts"])
    fc = any(s.get("flow_control") for s in plat.get("switches", []))
    if backend == "sim":
        from ..measure import sim_runner

        return sim_runner(plat, n, seed), n, fc
    from ..emu import EmuCluster
    from ..measure.emu_mpi import emu_mpi_runner, emu_runner

    cluster = EmuCluster(plat).up()
    held.callback(cluster.down)
    if backend == "emu":
        return emu_runner(cluster, n), n, fc
    scratch = held.enter_context(tempfile.TemporaryDirectory(prefix="parcomm-measure-"))  # hydra's launcher script
    return emu_mpi_runner(cluster, n, Path(scratch)), n, fc


@click.command()
@click.option(
    "--backend",
    type=click.Choice(["sim", "emu", "emu-mpi", "local", "mpi"]),
    default="sim",
    show_default=True,
    help="sim: a simulated platform; emu: the platform emulated in network namespaces (root; "
    "kernel TCP, socket backend); emu-mpi: the same, ranks under MPICH, one per namespace; "
    "local: TCP processes on this machine; mpi: ranks under mpiexec",
)
@click.option(
    "--platform",
    "platform_spec",
    default="opteron:8",
    show_default=True,
    help="platform to measure (short form or TOML file; --backend sim, emu or emu-mpi)",
)
@click.option("--procs", "-n", type=IntIn(1, MAX_MEASURE_PROCS), default=None, help="ranks (default: every host)")
@click.option(
    "--sizes",
    default="0,64,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB",
    show_default=True,
    help="message sizes at which g, o_s and o_r are measured",
)
@click.option(
    "--patterns",
    type=click.Choice(["alltoall", "none"]),
    default="alltoall",
    show_default=True,
    help="measure g(m, C) for the XOR patterns Alltoall A and B use (eq. 3)",
)
@click.option("--pattern-ks", default=None, help="measure only these XOR patterns, e.g. 1,2,4 (others by symmetry)")
@click.option(
    "--rel-ci",
    type=float,
    default=0.05,
    show_default=True,
    callback=_rel_ci,
    help="repeat until the 95%% confidence interval is within this fraction of the mean",
)
@click.option("--rto", default="200ms", show_default=True, help="T_RTO of the platform's TCP (RTO minimum)")
@click.option(
    "--rto-probe",
    is_flag=True,
    help="also run PlogP-BR+'s RTO probe: Alltoall A and B at each size, counting the calls' RTO waits "
    "(needs a power-of-two --procs)",
)
@click.option(
    "--rto-calls",
    type=IntIn(1, 1000),
    default=4,
    show_default=True,
    help="with --rto-probe: timed calls per size (after one untimed call)",
)
@click.option("--seed", type=SEED, default=1, show_default=True, help="seed of the simulated platform's random streams")
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="parameter file to write (JSON)"
)
def measure(
    backend, platform_spec, procs, sizes, patterns, pattern_ks, rel_ci, rto, rto_probe, rto_calls, seed, out
) -> None:
    """Measure PlogP and PlogP-BR parameters (Kielmann's procedure, bidirectional
    g(m, C) of Nomura & Ishikawa §3.3, switch queue q of §3.1) and, with
    --rto-probe, PlogP-BR+'s expected RTO waits per Alltoall call.

    The procedure is a set of rank programs; the simulator, local TCP
    processes and MPI run them unchanged.
    """
    from contextlib import ExitStack

    from rich.console import Console

    from ..measure import measure as do_measure

    size_list = parse_with(_sizes, sizes, "--sizes")
    rto_s = parse_with(lambda v: parse_duration(v, "--rto", require_unit=True), rto, "--rto")
    ks = _pattern_ks(pattern_ks)
    try:
        with ExitStack() as held:
            runner, n, fc = _measure_runner(held, backend, platform_spec, procs, seed)
            con = Console(stderr=True)
            with con.status("measuring") as status:
                params = do_measure(
                    runner,
                    n,
                    size_list,
                    patterns=patterns,
                    pattern_ks=ks,
                    rel_ci=rel_ci,
                    rto_s=rto_s,
                    flow_control=fc,
                    progress=status.update,
                    rto_probe=rto_probe,
                    rto_calls=rto_calls,
                    meta={
                        "platform": platform_spec if backend in EMULATED_OR_SIMULATED else backend,
                        "backend": backend,
                        "seed": seed,
                    },
                )
        params.save(out)
    except (ValueError, OSError) as e:
        raise UserError(str(e)) from None
    except Exception as e:  # a real backend failed (e.g. a rank died): say so in one line
        from ..comm import CommError
        from ..emu import EmuError

        if isinstance(e, (CommError, EmuError)):
            raise UserError(f"measurement failed on backend {backend}: {e}") from None
        raise
    q = params.queue_bytes
    overflowed = params.meta.get("queue_overflow_seen")
    bound = " (a lower bound: the flood never overflowed the port)" if overflowed is False else ""
    con.print(
        f"L = {params.L * 1e6:.2f} us, g(0) = {params.g[0] * 1e6:.2f} us, "
        f"q = {q if q is None else round(q)} B{bound}; wrote {out}"
    )


@click.group()
def model() -> None:
    """Predict collective times with closed-form models and pick the fastest algorithm.

    \b
    Models: hockney, logp, loggp, plogp, plogp-br (Nomura & Ishikawa), plogp-br+ (plogp-br
    with a measured RTO term: `parcomm measure --rto-probe`).
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
DEFAULT_SELECT_WHY = (
    "the default without an RTO probe in the parameter file: it models RTO penalties, so it "
    "ranks algorithms better than PlogP in the nomura study; its absolute times are less accurate"
)
#: ... and when the parameter file holds the RTO probe (`parcomm measure --rto-probe`).
PROBED_SELECT_MODEL = "plogp-br+"
PROBED_SELECT_WHY = (
    "the default with an RTO probe in the parameter file: the lowest selection penalty and error in the nomura study"
)
EMIT_SIZES = "1KiB,4KiB,16KiB,64KiB,256KiB,1MiB"
#: Ceiling of a selection file --mpich-base names (MPICH's own is ~60 KiB).
MAX_BASE_BYTES = 4 << 20

_params_opt = click.option(
    "--params",
    "params_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="parameter file written by `parcomm measure`",
)


@model.command()
@click.argument("collective", type=click.Choice(["alltoall", "bcast", "barrier"]))
@click.option(
    "--params",
    "params_paths",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    multiple=True,
    help="parameter file written by `parcomm measure`; with --emit, one per "
    "communicator size of the grid (each file's P), repeat the option",
)
@click.option("--procs", "-n", type=IntIn(1, MAX_MODEL_PROCS), default=None, help="ranks P (required without --emit)")
@click.option("--size", default="64KiB", show_default=True, help="message size m per rank pair (64KiB, 1MB, ...)")
@click.option(
    "--model",
    "model_name",
    default=None,
    help="hockney, logp, loggp, plogp, plogp-br or plogp-br+ [default: plogp-br+ if the parameter "
    "file holds an RTO probe, else plogp-br; see below]",
)
@click.option("--json", "as_json", is_flag=True, help="print the choice and every predicted time as JSON")
@click.option(
    "--emit",
    type=click.Choice(["mpich-json", "openmpi-rules"]),
    default=None,
    help="write a selection file an MPI library reads, from the model's choice at every (P, m) of the "
    "grid (alltoall only): MPICH's MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE or Open MPI's "
    "coll_tuned_dynamic_rules_filename",
)
@click.option("--sizes", default=EMIT_SIZES, show_default=True, help="with --emit: the grid's message sizes m")
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="with --emit: the file to write"
)
@click.option(
    "--mpich-base",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="with --emit mpich-json: the selection file whose other collectives the emitted file keeps "
    "(MPICH reads the file as its whole selection tree) [default: the installed MPICH's own, "
    "read from its libmpi]",
)
def select(collective, params_paths, procs, size, model_name, as_json, emit, sizes, out, mpich_base) -> None:
    """The fastest algorithm for COLLECTIVE under a model, with every algorithm's predicted time.

    The default model is PlogP-BR+ when the parameter file holds the RTO probe (`parcomm
    measure --rto-probe`): in the nomura study (`parcomm repro nomura`) its selection penalty
    against the measured best is the lowest. Without the probe it is PlogP-BR, the model that
    sees retransmission timeouts at all (its absolute times are far less accurate; use
    `parcomm model predict` to compare times).

    With --emit, the choices over a grid (P of each --params file x --sizes) are written as a
    selection file: Alltoall A as MPICH's scattered / Open MPI's linear, B as pairwise.

    \b
    Example:
      parcomm model select alltoall --params p8.json --params p64.json \\
          --emit mpich-json --out alltoall.json
      MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=$PWD/alltoall.json mpiexec -n 64 ./app
    """
    from ..models import select as do_select

    all_params = [_load(p) for p in params_paths]
    why = "chosen with --model"
    if model_name is None:
        model_name, why = _default_model(all_params)
    if emit:
        _emit(collective, all_params, model_name, emit, sizes, out, mpich_base)
        return
    if procs is None:
        raise click.UsageError("--procs is required (without --emit)")
    if len(all_params) > 1:
        raise click.UsageError("--params may be repeated only with --emit")
    params = all_params[0]
    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    try:
        best, times = do_select(collective, params, procs, nbytes, model_name)
    except ValueError as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json(
            {
                "collective": collective,
                "model": model_name,
                "model_reason": why,
                "procs": procs,
                "size_bytes": nbytes,
                "best": best,
                "predicted_s": times,
            }
        )
        return
    click.echo(f"{collective}, {procs} procs, {nbytes} B, model {model_name} ({why}):")
    for algo, t in sorted(times.items(), key=lambda kv: kv[1]):
        click.echo(f"  {algo:26} {t * 1e3:12.4f} ms{'   <- fastest' if algo == best else ''}")


def _default_model(all_params) -> tuple[str, str]:
    if all(p.rto_waits for p in all_params):
        return PROBED_SELECT_MODEL, PROBED_SELECT_WHY
    return DEFAULT_SELECT_MODEL, DEFAULT_SELECT_WHY


def _emit(collective, all_params, model_name, emit, sizes, out, mpich_base) -> None:
    from ..models import emit as E

    if collective != "alltoall":
        raise click.UsageError(f"--emit writes Alltoall rules only (Nomura & Ishikawa's A and B), not {collective}")
    if out is None:
        raise click.UsageError("--emit needs --out FILE")
    if mpich_base is not None and emit != "mpich-json":
        raise click.UsageError("--mpich-base goes with --emit mpich-json only")
    grid = parse_with(_sizes, sizes, "--sizes")
    by_procs = {}
    for p in all_params:
        if p.procs in by_procs:
            raise UserError(f"--params: two parameter files for P = {p.procs}; give one per communicator size")
        by_procs[p.procs] = p
    try:
        choices = E.grid_choices(by_procs, grid, model_name)
        text = E.mpich_json(choices, _mpich_base(mpich_base)) if emit == "mpich-json" else E.openmpi_rules(choices)
        out.write_text(text)
    except (ValueError, OSError) as e:
        raise UserError(str(e)) from None
    for p, row in choices.items():
        click.echo(
            f"P={p}: " + ", ".join(f"{m} B {algo.removeprefix('alltoall_').upper()}" for m, algo in row), err=True
        )
    click.echo(f"model {model_name}; wrote {out} ({emit})", err=True)


def _mpich_base(path: Path | None) -> dict:
    """The selection tree whose other collectives the emitted MPICH file keeps."""
    import json as _json

    from ..measure.emu_mpi import installed_mpich_selection
    from ..platform.loader import read_bounded

    if path is None:
        return installed_mpich_selection()
    try:
        doc = _json.loads(read_bounded(path, "selection file", MAX_BASE_BYTES, ValueError))
    except RecursionError:
        raise ValueError(f"--mpich-base {path}: nested too deeply") from None
    except _json.JSONDecodeError as e:
        raise ValueError(f"--mpich-base {path}: malformed JSON at line {e.lineno}: {e.msg}") from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) and k.startswith("collective=") for k in doc):
        raise ValueError(f"--mpich-base {path}: not an MPICH selection file (its keys are collective=NAME)")
    return doc


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
        emit_json(
            {"algorithm": algorithm, "procs": procs, "size_bytes": nbytes, "predicted_s": times, "unavailable": missing}
        )
        return
    for name, t in times.items():
        click.echo(f"  {name:10} {t * 1e3:12.4f} ms")
    for name, why in missing.items():  # e.g. PlogP-BR from a file without q
        click.echo(f"  {name:10} {'n/a':>12}    ({why})")
