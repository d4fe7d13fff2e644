"""PlogP-BR+ (issue 21): PlogP-BR with the expected RTO waits per call measured
by a probe on the target, kept beside the paper's PlogP-BR."""

import json

import pytest
from parcomm.measure import measure, sim_runner
from parcomm.measure.rto_probe import probe_rto, waits_of
from parcomm.models import PlogPBR, PlogPParams, make_model
from parcomm.platform import opteron_cluster
from parcomm.studies import nomura


def params(**kw):
    base = dict(
        procs=8,
        L=50e-6,
        sizes=[0, 1024, 65536],
        g=[5e-6, 15e-6, 560e-6],
        o_s=[1e-6] * 3,
        o_r=[1e-6] * 3,
        queue_bytes=100_000.0,
        rto_s=0.2,
        rto_sizes=[1024, 65536],
        rto_waits={"alltoall_a": [0.0, 1.5], "alltoall_b": [0.0, 0.0]},
    )
    return PlogPParams(**{**base, **kw})


def test_br_plus_is_br_without_eq1_plus_the_measured_waits():
    p = params()
    br, plus = PlogPBR(p), make_model("plogp-br+", p)
    for m in (16, 1024, 30000, 65536, 1 << 20):
        w = p.rto_waits_at("alltoall_a", m)
        assert plus.predict("A", 8, m) == pytest.approx(br.alltoall_a_no_rto(8, m) + w * 0.2)
        assert plus.predict("B", 8, m) == pytest.approx(br.predict("B", 8, m))
    # linear between probe sizes, the nearest probe's value outside them (no extrapolated trend)
    assert p.rto_waits_at("alltoall_a", (1024 + 65536) / 2) == pytest.approx(0.75)
    assert p.rto_waits_at("alltoall_a", 16) == 0.0 and p.rto_waits_at("alltoall_a", 1 << 30) == 1.5
    # the paper's model is unchanged: E_q is 0 or 1 by eq. 1
    assert br.predict("A", 8, 65536) == pytest.approx(br.alltoall_a_no_rto(8, 65536) + 0.2)


def test_br_plus_refuses_what_its_probe_did_not_measure():
    with pytest.raises(ValueError, match="P its RTO probe ran at"):
        make_model("plogp-br+", params()).predict("A", 16, 1024)
    with pytest.raises(ValueError, match="rto-probe"):
        make_model("plogp-br+", params(rto_sizes=[], rto_waits={})).predict("A", 8, 1024)


def test_rto_probe_fields_round_trip_and_are_validated():
    p = params()
    assert PlogPParams.loads(p.to_json()) == p
    d = json.loads(p.to_json())
    for bad, msg in [
        ({"rto_waits": {"alltoall_a": [0.0]}}, "one per rto_sizes"),
        ({"rto_sizes": [65536, 1024]}, "strictly increasing"),
        ({"rto_waits": {"alltoall_a": [0.0, -1.0]}}, "rto_waits"),
        ({"rto_sizes": [], "rto_waits": {"alltoall_a": []}}, "needs 'rto_sizes'"),
    ]:
        with pytest.raises(ValueError, match=msg):
            PlogPParams.from_dict({**d, **bad})
    # files written before PlogP-BR+ still load (no probe: the fields default to empty)
    old = {k: v for k, v in d.items() if k not in ("rto_sizes", "rto_waits")}
    assert PlogPParams.from_dict(old).rto_waits == {}


def test_a_wait_counts_only_when_the_excess_is_rto_sized():
    assert waits_of(0.012, 0.010, 0.2) == 0.0  # queueing, not a timeout
    assert waits_of(0.210, 0.010, 0.2) == pytest.approx(1.0)
    assert waits_of(0.610, 0.010, 0.2) == pytest.approx(3.0)  # RTO, then a backed-off 2 RTO
    with pytest.raises(ValueError, match="T_RTO"):
        probe_rto(lambda prog, kw: [], [0], lambda pat, m: 0.0, 0.0)


def test_probe_sees_rto_waits_only_where_the_switch_drops():
    # The same 16 hosts with a small (32 KiB) port buffer: without flow control A's
    # incast overflows it and calls wait for RTOs; with flow control nothing is lost.
    def waits(fc):
        plat = opteron_cluster(16, buffer=32 * 1024, flow_control=fc)
        p = measure(
            sim_runner(plat, 16, 1, rendezvous="receiver"),
            16,
            [0, 65536],
            patterns="none",
            probe_queue=False,
            flow_control=fc,
            rto_probe=True,
            rto_sizes=[1024, 65536],
            rto_calls=2,
        )
        return p.rto_waits

    lossy, lossless = waits(False), waits(True)
    assert lossy["alltoall_a"][0] == 0.0 and lossy["alltoall_a"][1] >= 1.0
    assert lossless == {"alltoall_a": [0.0, 0.0], "alltoall_b": [0.0, 0.0]}


def test_probe_is_deterministic():
    def w():
        p = measure(
            sim_runner(opteron_cluster(8), 8, 2),
            8,
            [0, 4096],
            patterns="none",
            probe_queue=False,
            rto_probe=True,
            rto_calls=2,
        )
        return p.rto_waits

    assert w() == w()


def row(m, algo, actual, **pred):
    return {"size_bytes": m, "algo": algo, "actual_s": actual, **{f"{k}_s": v for k, v in pred.items()}}


def test_selection_penalty_is_the_mean_slowdown_of_the_pick_against_the_oracle():
    rows = [
        row(1, "A", 1.0, x=1.0),
        row(1, "B", 2.0, x=2.0),  # right pick: 0
        row(2, "A", 3.0, x=1.0),
        row(2, "B", 1.0, x=2.0),
    ]  # picks A, 3x the best: 2.0
    assert nomura._penalty(rows, "x") == pytest.approx(1.0)


def test_measure_cli_writes_the_probe_and_refuses_it_where_alltoall_cannot_run(tmp_path, capsys):
    from parcomm.cli import main

    out = tmp_path / "p.json"
    assert (
        main(
            [
                "measure",
                "--platform",
                "opteron:4",
                "--sizes",
                "0,1KiB",
                "--patterns",
                "none",
                "--rto-probe",
                "--rto-calls",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    p = PlogPParams.load(out)
    assert p.rto_sizes == [0, 1024] and set(p.rto_waits) == {"alltoall_a", "alltoall_b"}
    assert p.meta["rto_probe_calls"] == 1
    assert main(["measure", "--platform", "opteron:6", "--rto-probe", "--out", str(out)]) == 2
    assert "power-of-two" in capsys.readouterr().err


def test_costly_picks_name_the_sizes_that_dominate_the_penalty():
    rows = [
        row(1, "A", 1.0, x=1.0),
        row(1, "B", 1.2, x=2.0),  # right
        row(2, "A", 3.0, x=1.0),
        row(2, "B", 1.0, x=2.0),
    ]  # picks A at 3x the best
    for r in rows:
        r["rto_waits"] = 0.0
    assert nomura._costly_picks(rows, "x") == [(2, "A", 0.0, pytest.approx(2.0))]
