"""``parcomm mine``: association-rule mining (Oguchi et al.): the Quest generator,
serial Apriori and HPA on any backend."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

import click

from ..platform.units import parse_count, parse_size
from .common import Duration, IntIn, UserError, emit_json, parse_with


def _fraction(value: str, option: str) -> float:
    try:
        v = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise click.UsageError(f"{option}: {value!r} is not a fraction (0.007) or a percentage (0.7%)") from None
    if not 0 <= v <= 1:
        raise click.UsageError(f"{option}: {value!r} is not between 0 and 1 (0% and 100%)")
    return v


@click.group()
def mine() -> None:
    """Association-rule mining: Quest data, serial Apriori, HPA (Oguchi et al.).

    \b
    parcomm mine gen data.qtx --transactions 100k --items 1000 --parts 16
    parcomm mine run data.qtx --algo hpa --procs 16 --platform atm:16 --min-support 0.7%
    """


#: QuestParams' fields as ``mine gen`` names them, for its errors.
_GEN_OPTIONS = {
    "transactions": "--transactions/-D",
    "avg_len": "--avg-len/-T",
    "avg_pattern_len": "--avg-pattern-len/-I",
    "items": "--items/-N",
    "patterns": "--patterns/-L",
    "correlation": "--correlation",
    "corruption": "--corruption",
}


def _with_option(message: str) -> str:
    """A QuestParams error (it starts with the field's name, or two joined by " x ") prefixed
    with the options to fix."""
    words = message.split(" ")
    fields = [words[0], words[2]] if len(words) > 2 and words[1] == "x" else [words[0]]
    options = [_GEN_OPTIONS[f] for f in fields if f in _GEN_OPTIONS]
    return f"{' and '.join(options)}: {message}" if options else message


@mine.command()
@click.argument("out", type=click.Path(dir_okay=False))
@click.option(
    "--transactions", "-D", default="10k", show_default=True, help="number of transactions D (10M, 100k, ...)"
)
@click.option("--avg-len", "-T", type=float, default=10.0, show_default=True, help="average transaction length T")
@click.option("--avg-pattern-len", "-I", type=float, default=4.0, show_default=True, help="average pattern length I")
@click.option("--items", "-N", default="1000", show_default=True, help="number of items N")
@click.option("--patterns", "-L", default="2000", show_default=True, help="number of patterns L")
@click.option(
    "--correlation", type=float, default=0.5, show_default=True, help="correlation between consecutive patterns (Quest)"
)
@click.option(
    "--corruption", type=float, default=0.5, show_default=True, help="mean corruption level of patterns (Quest)"
)
@click.option(
    "--seed", type=IntIn(0), default=1, show_default=True, help="seed of the generator (same seed, same bytes)"
)
@click.option(
    "--parts", "-P", type=IntIn(1), default=1, show_default=True, help="partitions (nodes) in the binary file"
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["binary", "text"]),
    default="binary",
    show_default=True,
    help="binary: checksummed .qtx chunks ranks read in parallel; text: one transaction per line",
)
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def gen(
    out, transactions, avg_len, avg_pattern_len, items, patterns, correlation, corruption, seed, parts, fmt, as_json
) -> None:
    """Generate IBM Quest synthetic transactions (Agrawal & Srikant, VLDB '94) into OUT."""
    from ..apps.hpa.quest import MAX_PARTS, QuestParams, generate_transactions, write_quest, write_text

    d = parse_with(lambda v: parse_count(v, "--transactions"), transactions, "--transactions")
    n = parse_with(lambda v: parse_count(v, "--items"), items, "--items")
    l = parse_with(lambda v: parse_count(v, "--patterns"), patterns, "--patterns")
    p = QuestParams(
        transactions=d,
        avg_len=avg_len,
        avg_pattern_len=avg_pattern_len,
        items=n,
        patterns=l,
        correlation=correlation,
        corruption=corruption,
        seed=seed,
    )
    try:
        p.check()
    except ValueError as e:
        raise click.UsageError(_with_option(str(e))) from None
    if not 1 <= parts <= MAX_PARTS:
        raise click.UsageError(f"--parts must be in 1..{MAX_PARTS}, got {parts}")
    if not 0 <= seed < 1 << 128:
        raise click.UsageError(f"--seed must be in 0..2^128-1, got {seed}")
    try:
        if fmt == "binary":
            info = write_quest(out, p, parts)
        else:
            tx = generate_transactions(p)
            write_text(out, tx)
            info = {
                "transactions": len(tx),
                "items_total": int(len(tx.items)),
                "avg_len": len(tx.items) / max(1, len(tx)),
                "size_bytes": os.path.getsize(out),
            }
    except (ValueError, OSError) as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json({"file": out, **info})
    else:
        click.echo(
            f"{out}: {info['transactions']} transactions, average length {info['avg_len']:.2f}, {info['size_bytes']} bytes"
        )


@mine.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--algo",
    type=click.Choice(["serial", "hpa"]),
    default="hpa",
    show_default=True,
    help="serial: Apriori in this process; hpa: Hash Partitioned Apriori on --procs ranks",
)
@click.option("--procs", "-n", type=int, default=None, help="ranks for hpa (default: hosts of the platform, or 4)")
@click.option(
    "--backend",
    type=click.Choice(["sim", "local", "mpi"]),
    default="sim",
    show_default=True,
    help="sim: a simulated platform; local: TCP processes here; mpi: ranks under MPI",
)
@click.option(
    "--platform", "platform_spec", default="atm:16", show_default=True, help="simulated platform (--backend sim)"
)
@click.option("--rto-min", default=None, help="TCP RTO minimum (sim), e.g. 200ms")
@click.option("--rto-max", default=None, help="TCP RTO maximum (sim), e.g. 60s")
@click.option("--min-support", default="1%", show_default=True, help="fraction (0.007) or percentage (0.7%)")
@click.option("--min-conf", default="50%", show_default=True, help="minimum rule confidence")
@click.option("--block", default="8KiB", show_default=True, help="HPA message block size (8 KB in the paper)")
@click.option("--max-len", type=int, default=None, help="stop after itemsets of this length")
@click.option("--seed", type=int, default=1, show_default=True, help="simulator seed")
@click.option("--itemsets-out", type=click.Path(dir_okay=False), default=None, help="write frequent itemsets here")
@click.option("--rules-out", type=click.Path(dir_okay=False), default=None, help="write rules here")
@click.option(
    "--timeout",
    type=Duration(),
    default="600s",
    show_default=True,
    help="time limit of a real run, with a unit: 90s, 10min (--backend local/mpi)",
)
@click.option("--json", "as_json", is_flag=True, help="print the large itemsets and timings as JSON")
def run(
    file,
    algo,
    procs,
    backend,
    platform_spec,
    rto_min,
    rto_max,
    min_support,
    min_conf,
    block,
    max_len,
    seed,
    itemsets_out,
    rules_out,
    timeout,
    as_json,
) -> None:
    """Mine FILE (a `mine gen` binary file or a text file of integer item ids,
    one transaction per line) and print Table 2's columns per pass."""
    from ..apps.hpa.apriori import rules

    minsup, minconf, block_bytes = _run_options(file, min_support, min_conf, block)
    extra: dict[str, Any] = {}
    with _failures_in_one_line():
        if algo == "serial":
            summary, itemsets = _mine_serial(file, minsup, max_len)
            procs = 1
            backend = "serial"
        else:
            summary, itemsets, procs, extra = _mine_hpa(
                file,
                {"min_support": minsup, "block_bytes": block_bytes, "max_len": max_len},
                backend,
                procs,
                platform_spec,
                rto_min,
                rto_max,
                seed,
                timeout,
            )
        rl = rules(itemsets, summary["n_transactions"], minconf)
    n = summary["n_transactions"]
    _write_mined(itemsets_out, rules_out, itemsets, rl, n)
    out = {
        "file": file,
        "algo": algo,
        "backend": backend,
        "procs": procs,
        "min_support": minsup,
        "min_confidence": minconf,
        **summary,
        "itemsets": len(itemsets),
        "rules": len(rl),
        **extra,
    }
    if as_json:
        emit_json(out)
        return
    _print_mined(file, algo, backend, procs, n, minsup, minconf, summary, len(itemsets), len(rl), extra)


@contextlib.contextmanager
def _failures_in_one_line() -> Iterator[None]:
    """A bad transaction file, a bad value, an I/O error or a failed run becomes a
    one-line :class:`UserError`; anything else (a bug) keeps its traceback."""
    from ..apps.hpa.quest import TransactionFileError

    try:
        yield
    except TransactionFileError as e:
        raise UserError(str(e)) from None
    except (ValueError, OSError) as e:
        raise UserError(f"{type(e).__name__}: {e}") from None
    except Exception as e:  # CommError and friends: one line
        from ..comm import CommError

        if isinstance(e, CommError):
            raise UserError(str(e)) from None
        raise


def _run_options(file: str, min_support: str, min_conf: str, block: str) -> tuple[float, float, int]:
    """``mine run``'s options checked before any work: (min support, min confidence, block
    bytes); a missing FILE is the user's error."""
    minsup = _fraction(min_support, "--min-support")
    minconf = _fraction(min_conf, "--min-conf")
    block_bytes = parse_with(lambda v: parse_size(v, "--block"), block, "--block")
    if block_bytes < 64:
        raise click.UsageError(f"--block must be at least 64 bytes, got {block}")
    if not os.path.exists(file):
        raise UserError(f"{file}: no such file")
    return minsup, minconf, block_bytes


def _mine_serial(file: str, minsup: float, max_len: int | None) -> tuple[dict[str, Any], dict]:
    """Apriori in this process: (summary with the passes and total time, frequent itemsets)."""
    from ..apps.hpa.apriori import apriori
    from ..apps.hpa.quest import load

    res = apriori(load(file), minsup, max_len)
    summary = {
        "n_transactions": res.n_transactions,
        "min_count": res.min_count,
        "passes": res.passes,
        "time_s": sum(p["time_s"] for p in res.passes),
    }
    return summary, res.itemsets()


def _mine_hpa(
    file: str,
    options: dict[str, Any],
    backend: str,
    procs: int | None,
    platform_spec: str,
    rto_min: str | None,
    rto_max: str | None,
    seed: int,
    timeout: float,
) -> tuple[dict[str, Any], dict, int, dict[str, Any]]:
    """HPA on ``procs`` ranks of ``backend`` (``options``: HPA's min_support, block_bytes,
    max_len): (merged summary, frequent itemsets, the number of ranks used, the simulator's
    extra figures, empty on real backends)."""
    from ..apps.hpa.hpa import levels_to_dict, merge_result
    from ..apps.hpa.quest import count_transactions

    count_transactions(file)  # a bad file is the user's error, said once, not once per rank
    kwargs = {"path": os.path.abspath(file), **options}
    prog = "parcomm.apps.hpa.hpa:hpa"
    extra: dict[str, Any] = {}
    if backend == "sim":
        from ..apps.hpa.hpa import hpa
        from ..comm import run_sim
        from .common import load_platform

        plat = load_platform(platform_spec, rto_min, rto_max, None)
        procs = procs or len(plat["hosts"])
        r = run_sim(hpa, plat, procs, seed=seed, kwargs=kwargs)
        results = r.results
        extra = {
            "platform": platform_spec,
            "sim_time_s": r.time,
            **r.host_totals(),
            "port_drops": r.port_drops(),
        }
    elif backend == "local":
        from ..comm import run_local

        procs = procs or 4
        results = run_local(prog, procs, kwargs=kwargs, timeout=timeout).results
    else:
        from ..comm import run_mpi

        procs = procs or 4
        results = run_mpi(prog, procs, kwargs=kwargs, timeout=timeout).results
    summary = merge_result(results)
    itemsets = levels_to_dict(summary.pop("levels"))
    return summary, itemsets, procs, extra


def _write_mined(itemsets_out: str | None, rules_out: str | None, itemsets: dict, rl: list, n: int) -> None:
    """Write the frequent itemsets (by length, then items) and the rules, where asked, one per
    line with their counts, supports and confidences."""
    try:
        if itemsets_out:
            with open(itemsets_out, "w") as f:
                for iset, c in sorted(itemsets.items(), key=lambda kv: (len(kv[0]), kv[0])):
                    f.write(f"{' '.join(map(str, iset))}\t{c}\t{c / n:.6g}\n")
        if rules_out:
            with open(rules_out, "w") as f:
                for r_ in rl:
                    f.write(
                        f"{' '.join(map(str, r_.lhs))} -> {' '.join(map(str, r_.rhs))}\t{r_.count}\t"
                        f"{r_.support:.6g}\t{r_.confidence:.6g}\n"
                    )
    except OSError as e:
        raise UserError(str(e)) from None


def _print_mined(
    file: str,
    algo: str,
    backend: str,
    procs: int,
    n: int,
    minsup: float,
    minconf: float,
    summary: dict[str, Any],
    n_itemsets: int,
    n_rules: int,
    extra: dict[str, Any],
) -> None:
    """Table 2's columns per pass, then the totals (and, on the simulator, losses)."""
    from rich.console import Console
    from rich.table import Table

    t = Table(
        title=f"{algo} on {file} ({backend}, {procs} rank{'s' if procs != 1 else ''}), "
        f"{n} transactions, min support {minsup:g} (count {summary['min_count']})"
    )
    for col in ("pass", "C (candidates)", "L (large)", "T [s]"):
        t.add_column(col, justify="right", overflow="fold")
    for p in summary["passes"]:
        t.add_row(str(p["pass"]), str(p["candidates"]), str(p["large"]), f"{p['time_s']:.4f}")
    con = Console()
    con.print(t)
    con.print(
        f"{n_itemsets} frequent itemsets, {n_rules} rules with confidence >= {minconf:g}; "
        f"total {summary['time_s']:.4f} s" + (" (simulated)" if backend == "sim" else "")
    )
    if extra.get("bytes_retransmitted"):
        con.print(
            f"retransmitted bytes {extra['bytes_retransmitted']}, timeouts {extra['timeouts']}, "
            f"port drops {extra['port_drops']}"
        )
