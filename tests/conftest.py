"""Shared fixtures. ``versitygw``: one real S3 server (versitygw, posix backend) on
127.0.0.1 for the whole session, installed with ``go install`` if missing; tests
using it are skipped only when it can be neither found nor installed. ``mpi``: skips
a test that needs ``mpiexec`` only if ``mpiexec -n 2`` genuinely cannot run here."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _mpiexec_problem() -> str | None:
    """None if ``mpiexec -n 2`` runs an mpi4py barrier here, else the reason it cannot."""
    from parcomm.comm import CommError
    from parcomm.comm.mpi import find_mpiexec

    try:
        exe = find_mpiexec()
    except CommError as e:
        return str(e)
    try:
        run = subprocess.run(
            [exe, "-n", "2", sys.executable, "-c", "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{exe} cannot start: {e}"
    return None if run.returncode == 0 else f"{exe} -n 2 failed: {run.stderr.strip()[-300:]}"


@pytest.fixture(scope="session")
def mpi():
    """Skips an MPI test, with the reason, only if mpiexec genuinely cannot run here (checked
    once per session)."""
    problem = _mpiexec_problem()
    if problem is not None:
        pytest.skip(f"mpiexec cannot run here: {problem}")


@pytest.fixture(scope="session")
def versitygw(tmp_path_factory):
    from parcomm.apps.bcast.versitygw import VersityGW, VersityGWNotAvailable, ensure_versitygw

    try:
        binary = ensure_versitygw(install=True)
    except VersityGWNotAvailable as exc:
        pytest.skip(f"versitygw unavailable: {exc}")
    with VersityGW(tmp_path_factory.mktemp("versitygw-root"), binary=binary) as gw:
        yield gw


@pytest.fixture(scope="session")
def s3_bucket(versitygw) -> str:
    """A bucket on the session's versitygw; tests use keys unique to themselves."""
    versitygw.create_bucket("parcomm-test")
    return "parcomm-test"
