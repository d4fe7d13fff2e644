"""``parcomm keygen``: a job key for members started by hand on several machines."""

from __future__ import annotations

from pathlib import Path

import click

from .common import UserError


@click.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def keygen(path: Path) -> None:
    """Write a new random job key (256 bits, hex) to PATH, readable by its owner only.

    \b
    Give the same file to every member of one job:
      parcomm run socket ... --key-file PATH
      parcomm bcast s3://b/k --rendezvous head:7000 ... --key-file PATH
    (or export its content as $PARCOMM_JOB_KEY). Members prove they hold it on
    every connection; anyone without it cannot join. PATH must not exist yet.
    """
    from ..auth import JobKey

    try:
        JobKey.generate().write(path)
    except FileExistsError:
        raise UserError(f"{path} already exists; keygen never overwrites a key") from None
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror or e}") from None
    click.echo(f"wrote a new job key to {path} (mode 600)")
