"""The ``parcomm`` command line: one subcommand group per way of answering.

User mistakes (bad sizes, unknown platforms, invalid platform files) end with
a one-line error and exit status 2; they never show a traceback.
"""

from __future__ import annotations

import importlib
import re
import sys

import click

from .common import UserError

#: Each command and the module (of this package) that defines it, in the order of the help.
#: A command's module is imported only when that command runs (or the help lists it): a
#: ``parcomm bcast get`` on every node of a job need not load the studies, the emulator or MPI.
COMMANDS = {
    "model": "model",
    "measure": "model",
    "sim": "sim",
    "repro": "repro",
    "emu": "emu",
    "compare": "compare",
    "conformance": "conformance",
    "run": "run",
    "mcast": "mcast",
    "mine": "mine",
    "heat": "heat",
    "bcast": "bcast",
    "keygen": "keygen",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if module is None:
            return None
        return getattr(importlib.import_module(f".{module}", __name__), cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="parcomm")
def cli() -> None:
    """parcomm: model, simulate, emulate and run communication in parallel and
    distributed systems, where packet loss, retransmission timeouts and
    bottleneck links decide performance.

    \b
    model    predict collective times (Hockney ... PlogP-BR) and select algorithms
    measure  measure PlogP / PlogP-BR parameters of a platform
    sim      run collectives on a simulated platform (deterministic, packet level)
    repro    reproduce the five papers' tables and figures
    emu      run on an emulated cluster: real Linux TCP in network namespaces (root)
    compare  put the simulator's and the emulation's times side by side
    conformance  the simulator held to real Linux TCP, scenario by scenario (root)
    run      run rank programs for real: local TCP processes, MPI, or one TCP rank
    mcast    reliable multicast with repair routers: model, placement, simulation
    mine     association-rule mining: Quest data, serial Apriori, HPA (Oguchi et al.)
    heat     parallel 2D heat equation on M x M tasks (Hironaka): run, model, benchmark
    bcast    broadcast a large object from S3 to many nodes (Chiba et al.): tool, simulation, demo
    keygen   write a job key for members started by hand (run socket, bcast --rendezvous)

    Run `parcomm COMMAND --help` for each command's options.
    """


def _brief(message: str, longest: int = 60) -> str:
    """click echoes the bad value whole; a 5,000-digit value would make a 5,000-character line."""
    return re.sub(rf"\S{{{longest + 1},}}", lambda m: f"{m.group(0)[:40]}… ({len(m.group(0))} characters)", message)


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="parcomm", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.UsageError as e:  # click's own form is three lines; every usage error here is one
        where = f" (see {e.ctx.command_path} --help)" if e.ctx is not None else ""
        click.echo(f"error: {_brief(e.format_message())}{where}", err=True)
        return e.exit_code
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except UserError as e:
        click.echo(f"error: {e}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
