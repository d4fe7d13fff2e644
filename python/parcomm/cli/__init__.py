"""The ``parcomm`` command line: one subcommand group per way of answering.

User mistakes (bad sizes, unknown platforms, invalid platform files) end with
a one-line error and exit status 2; they never show a traceback.
"""

from __future__ import annotations

import sys

import click

from .bcast import bcast
from .common import UserError
from .compare import compare
from .conformance import conformance
from .emu import emu
from .heat import heat
from .keygen import keygen
from .mcast import mcast
from .mine import mine
from .model import measure, model
from .repro import repro
from .run import run
from .sim import sim


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


cli.add_command(model)
cli.add_command(measure)
cli.add_command(sim)
cli.add_command(repro)
cli.add_command(emu)
cli.add_command(compare)
cli.add_command(conformance)
cli.add_command(run)
cli.add_command(mcast)
cli.add_command(mine)
cli.add_command(heat)
cli.add_command(bcast)
cli.add_command(keygen)


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="parcomm", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except UserError as e:
        click.echo(f"error: {e}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
