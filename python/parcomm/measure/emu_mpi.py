"""MPICH (the wheel's mpiexec) across an emulated cluster's hosts, and a
``parcomm measure`` runner on the same cluster.

Rank r runs in host r's network namespace, so every byte between ranks
crosses the shaped NICs and the switch ports of :class:`parcomm.emu.
EmuCluster`, over the kernel's own TCP. Hydra's ``ssh`` launcher is replaced
by a script that runs the proxy of host ADDR in ADDR's namespace, with a UTS
namespace of its own and its own host name (MPICH tells local ranks from
remote ones by host name; namespaces share the machine's). MPIR_CVAR_NOLOCAL
keeps data off shared memory; the OFI netmod with its tcp provider on eth0
carries it (the way ``benchmarks/bcast_baselines.py`` runs MPICH, with OFI
instead of UCX because the loopback test of ``--emit`` uses it too).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

LAUNCHER = """#!/bin/sh
# hydra's launcher: "$0 [ssh options] HOST COMMAND...": run COMMAND in HOST's namespace.
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac
done
host="$1"; shift
ns=$(printf '%s\\n' $PARCOMM_NS_MAP | grep "^$host=" | cut -d= -f2)
[ -n "$ns" ] || { echo "launcher: no namespace for $host" >&2; exit 1; }
exec ip netns exec "$ns" unshare --uts sh -c "hostname node-$(echo $host | tr . -); $*"
"""

#: MPICH's network path on the emulated cluster (see the module docstring), and
#: waiting ranks that give up the CPU: seed 001's hosts had a CPU each, here P
#: ranks share 2 cores, and MPICH's busy-wait would hand a rank with work the
#: CPU only at the scheduler's next slice (measured, P = 8, 1 KiB: Alltoall A
#: 19-44 ms spinning, 2.8 ms with the waits' nanosleep; MPICH documents the
#: variable as "use nanosleep to ensure other threads have a chance").
MPI_ENV = {
    "MPIR_CVAR_NOLOCAL": "1",
    "MPIR_CVAR_CH4_NETMOD": "ofi",
    "FI_PROVIDER": "tcp",
    "FI_TCP_IFACE": "eth0",
    "MPIR_CVAR_ENABLE_HEAVY_YIELD": "1",
}


def mpiexec() -> str:
    exe = shutil.which("mpiexec.hydra") or shutil.which("mpiexec")
    if not exe:
        raise ValueError("no mpiexec (pip install mpich)")
    return exe


#: A libmpi is some tens of MiB; reading is bounded all the same.
MAX_LIBRARY_BYTES = 256 << 20


def mpich_library() -> str:
    """The libmpi that mpi4py loads (without initializing MPI)."""
    try:
        import mpi4py

        mpi4py.rc.initialize = mpi4py.rc.finalize = False
        from mpi4py import MPI  # noqa: F401 - loads libmpi into this process
    except ImportError as e:
        raise ValueError(
            f"no MPI library to read MPICH's default selection from ({e}); give --mpich-base FILE"
        ) from None
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "/libmpi" in line}
    if not libs:
        raise ValueError("mpi4py loaded no libmpi; give --mpich-base FILE")
    return sorted(libs)[0]


def installed_mpich_selection() -> dict:
    """The installed MPICH's own default selection tree, read from its libmpi."""
    from ..models.emit import mpich_builtin_selection

    lib = mpich_library()
    with open(lib, "rb") as f:
        tree = mpich_builtin_selection(f.read(MAX_LIBRARY_BYTES))
    if tree is None:
        raise ValueError(
            f"{lib} holds no MPICH selection tree (another MPI?); give --mpich-base FILE "
            f"(MPICH's maint/tuning/coll/mpir/generic.json)"
        )
    return tree


def _hydra(cluster: Any, procs: int, workdir: Path, env: dict | None) -> tuple[list[str], dict[str, str], str]:
    """(mpiexec command up to the program, the launcher's environment, rank 0's
    namespace) for ``procs`` ranks of ``cluster``, one per host."""
    hosts = cluster.describe()["hosts"][:procs]
    if len(hosts) < procs:
        raise ValueError(f"{procs} ranks need {procs} hosts; the cluster has {len(hosts)}")
    workdir.mkdir(parents=True, exist_ok=True)
    script = workdir / "launcher.sh"
    script.write_text(LAUNCHER)
    script.chmod(0o700)
    ns_map = " ".join(f"{h['addr']}={h['netns']}" for h in hosts)
    genv = {**MPI_ENV, **(env or {}), "PARCOMM_NS_MAP": ns_map, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    cmd = [mpiexec(), "-launcher", "ssh", "-launcher-exec", str(script), "-hosts", ",".join(h["addr"] for h in hosts)]
    cmd += ["-ppn", "1", "-iface", "eth0"]
    for k, v in genv.items():
        cmd += ["-genv", k, str(v)]
    return cmd, genv, hosts[0]["netns"]


def run_mpich(
    cluster: Any, procs: int, argv: Sequence[str], workdir: Path, *, env: dict | None = None, timeout_s: float = 600.0
) -> str:
    """Run ``python ARGV...`` on ``procs`` ranks of ``cluster`` (one per host); rank 0's stdout."""
    hydra, genv, ns0 = _hydra(cluster, procs, workdir, env)
    cmd = [*hydra, "-n", str(procs), sys.executable, *argv]
    log = workdir / "mpiexec.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns0, *cmd],
            stdout=subprocess.PIPE,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **genv},
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # our own session: mpiexec and the proxies it started
            proc.communicate()
            raise RuntimeError(f"mpiexec did not finish in {timeout_s:g} s (log: {log})") from None
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:]
        raise RuntimeError(f"mpiexec exited with {proc.returncode}: {tail}")
    return out.decode(errors="replace")


def mpich_alltoall(
    cluster: Any,
    procs: int,
    sizes: Sequence[int],
    reps: int,
    workdir: Path,
    *,
    algos: Sequence[str] = ("A", "B"),
    env: dict | None = None,
    timeout_s: float = 900.0,
) -> dict[str, dict[int, list[float]]]:
    """{algo: {m: [seconds per timed call]}} of :mod:`.mpi_alltoall` under MPICH on ``cluster``."""
    out = run_mpich(
        cluster,
        procs,
        [
            "-m",
            "parcomm.measure.mpi_alltoall",
            "--sizes",
            ",".join(map(str, sizes)),
            "--reps",
            str(reps),
            "--algos",
            ",".join(algos),
        ],
        workdir,
        env=env,
        timeout_s=timeout_s,
    )
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"the MPI program printed no result: {out[-500:]!r}")
    doc = json.loads(lines[-1])
    return {a: {int(m): ts for m, ts in d.items()} for a, d in doc.items()}


def emu_runner(cluster: Any, procs: int, timeout_s: float = 120.0) -> Callable[[Callable[..., Any], dict], list]:
    """A runner for :func:`parcomm.measure.measure` on ``cluster``: each call is one run of
    the rank program over the socket backend (kernel TCP between the namespaces)."""

    def run(program, kwargs: dict) -> list:
        return cluster.run(program, procs, kwargs=kwargs, timeout_s=timeout_s).results

    return run


def emu_mpi_runner(
    cluster: Any, procs: int, workdir: Path, timeout_s: float = 120.0
) -> Callable[[Callable[..., Any], dict], list]:
    """A runner for :func:`parcomm.measure.measure` on ``cluster`` under MPICH: each call
    is one mpiexec of the rank program (:func:`parcomm.comm.mpi.run_mpi`), its ranks one
    per host as :func:`run_mpich` places them, so the parameters come from the same
    library and network path as the MPI programs they predict."""
    from ..comm.mpi import run_mpi

    hydra, genv, ns0 = _hydra(cluster, procs, workdir, None)
    # run_mpi starts one executable: a script that enters rank 0's namespace
    # with the launcher's environment and calls hydra with its arguments.
    wrapper = workdir / "mpiexec.sh"
    exports = "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in genv.items())
    wrapper.write_text(f'#!/bin/sh\n{exports}exec ip netns exec {shlex.quote(ns0)} {shlex.join(hydra)} "$@"\n')
    wrapper.chmod(0o700)

    def run(program, kwargs: dict) -> list:
        return run_mpi(program, procs, kwargs=kwargs, timeout=timeout_s, mpiexec=str(wrapper)).results

    return run
