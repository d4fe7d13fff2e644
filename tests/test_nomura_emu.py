"""The emulated half of study nomura: MPICH across an emulated cluster's
namespaces, and the RTO waits taken from its call times."""

import pytest
from netns import needs_netns
from parcomm.models import PlogPBR, PlogPParams
from parcomm.studies import nomura_emu


def test_port_buffer_scales_with_the_rate():
    plan = nomura_emu.EmuPlan()
    assert plan.buffer == round(128 * 1024 / 10)  # 100 Mbit/s: a tenth of the 1 Gbit/s port
    sw = nomura_emu.platform(plan, 4)["switches"][0]
    assert sw["buffer"]["size"] == plan.buffer


def test_waits_come_from_call_times_against_the_no_rto_time():
    p = PlogPParams(procs=4, L=1e-3, sizes=[0, 65536], g=[1e-4, 6e-3], o_s=[0, 0], o_r=[0, 0], rto_s=0.2)
    base = PlogPBR(p).alltoall_a_no_rto(4, 65536)
    times = {"A": {65536: [base, base + 0.2, base + 0.6, base + 0.05]}, "B": {65536: [0.01] * 4}}
    sizes, waits = nomura_emu._waits(p, times)
    assert sizes == [65536]
    assert waits["alltoall_a"] == [pytest.approx((0 + 1 + 3 + 0) / 4)]
    assert waits["alltoall_b"] == [0.0]


def test_the_simulator_runs_a_and_b_on_the_emulated_platform(tmp_path):
    """The simulated column beside emulated MPICH: the same platform, MPICH's rendezvous,
    no faster than the wire allows, and carried into the rows with its error."""
    from parcomm.studies import nomura
    from parcomm.studies.framework import StudyContext

    plan = nomura_emu.EmuPlan()
    procs, m = 4, 65536
    sim = nomura.simulate_on(StudyContext(tmp_path, quick=True), nomura_emu.platform(plan, procs), procs, [m])
    assert set(sim) == {("A", m), ("B", m)}
    wire = (procs - 1) * m * 8 / plan.rate_bps  # each host sends (P-1)m bytes over its own link
    for algo in ("A", "B"):
        assert sim[(algo, m)]["sim_s"] > wire
    p = PlogPParams(procs=procs, L=1e-4, sizes=[0, m], g=[1e-5, 6e-3], o_s=[0, 0], o_r=[0, 0], rto_s=0.2)
    p.rto_sizes, p.rto_waits = [m], {"alltoall_a": [0.0], "alltoall_b": [0.0]}
    actual = {"A": {m: [0.05, 0.07]}, "B": {m: [0.04]}}
    rows = nomura_emu._rows(p, actual, nomura_emu.EmuPlan(sizes=(m,)), procs, ("plogp",), sim)
    a = next(r for r in rows if r["algo"] == "A")
    assert a["sim_s"] == sim[("A", m)]["sim_s"]
    assert a["sim_err"] == pytest.approx(abs(a["sim_s"] - 0.06) / 0.06)


@needs_netns
@pytest.mark.skipif(nomura_emu.why_not() is not None, reason=f"{nomura_emu.why_not()}")
def test_mpich_runs_a_and_b_across_the_namespaces(tmp_path):
    from parcomm.emu import EmuCluster
    from parcomm.measure.emu_mpi import mpich_alltoall

    plan = nomura_emu.EmuPlan()
    with EmuCluster(nomura_emu.platform(plan, 4)) as cl:
        out = mpich_alltoall(cl, 4, [1024, 65536], 1, tmp_path)
    assert set(out) == {"A", "B"} and all(set(d) == {1024, 65536} for d in out.values())
    # 3 x 64 KiB leave each host at 100 Mbit/s: no call is faster than the wire
    assert min(out["A"][65536] + out["B"][65536]) >= 3 * 65536 * 8 / plan.rate_bps


@needs_netns
def test_measure_cli_on_the_emulated_platform(tmp_path, capsys):
    from parcomm.cli import main

    out = tmp_path / "p.json"
    assert (
        main(
            [
                "measure",
                "--backend",
                "emu",
                "--platform",
                "star:2",
                "--sizes",
                "0,1KiB",
                "--patterns",
                "none",
                "--rel-ci",
                "0.5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    p = PlogPParams.load(out)
    assert p.meta["backend"] == "emu" and 0 < p.L < 0.05
    # a platform the emulator cannot build is one clear line, not a traceback
    assert main(["measure", "--backend", "emu", "--platform", "opteron:2", "--out", str(out)]) == 2
    assert "netem" in capsys.readouterr().err


@needs_netns
@pytest.mark.skipif(nomura_emu.why_not() is not None, reason=f"{nomura_emu.why_not()}")
def test_measure_programs_run_under_mpich_across_the_namespaces(tmp_path):
    from parcomm.emu import EmuCluster
    from parcomm.measure.emu_mpi import emu_mpi_runner
    from parcomm.measure.procedure import rtt_program

    plan = nomura_emu.EmuPlan()
    m = 65536
    with EmuCluster(nomura_emu.platform(plan, 2)) as cl:
        rtts = emu_mpi_runner(cl, 2, tmp_path)(rtt_program, {"m": m, "back": m, "reps": 3})
    assert len(rtts) == 2 and len(rtts[0]) == 3
    # 64 KiB there and back over the 100 Mbit/s NICs: no round trip beats the wire
    assert min(rtts[0]) >= 2 * m * 8 / plan.rate_bps


@needs_netns
@pytest.mark.skipif(nomura_emu.why_not() is not None, reason=f"{nomura_emu.why_not()}")
def test_measure_cli_under_mpich_on_the_emulated_platform(tmp_path):
    from parcomm.cli import main

    out = tmp_path / "p.json"
    argv = ["measure", "--backend", "emu-mpi", "--platform", "star:2", "--sizes", "0,1KiB", "--patterns", "none"]
    assert main([*argv, "--rel-ci", "0.5", "--out", str(out)]) == 0
    p = PlogPParams.load(out)
    assert p.meta["backend"] == "emu-mpi" and p.procs == 2 and p.sizes == [0, 1024]
    # g(1 KiB) is a difference of two round trips and may clamp to 0 on a loaded machine;
    # L + g(0) = RTT(0, 0)/2 cannot: a round trip takes time.
    assert all(x >= 0 for x in p.g) and p.L + p.g[0] > 0
