"""Closed-form models against hand-computed values, parameter files, selection,
and the measurement procedure against a platform whose parameters are known
by construction."""

import json

import pytest
from parcomm.models import (
    Hockney,
    LogGP,
    LogP,
    PlogP,
    PlogPBR,
    PlogPParams,
    make_model,
    predict_all,
    rto_penalty_count,
    select,
)
from parcomm.models.params import interpolate


def params(**kw):
    base = dict(
        procs=8,
        L=10e-6,
        sizes=[0, 1000, 2000],
        g=[5e-6, 15e-6, 25e-6],
        o_s=[1e-6] * 3,
        o_r=[2e-6] * 3,
        queue_bytes=6000.0,
        flow_control=False,
        rto_s=0.2,
    )
    base.update(kw)
    return PlogPParams(**base)


def test_interpolation_is_piecewise_linear_and_extrapolates_the_last_slope():
    assert interpolate([0, 10, 20], [0.0, 1.0, 3.0], 5) == pytest.approx(0.5)
    assert interpolate([0, 10, 20], [0.0, 1.0, 3.0], 15) == pytest.approx(2.0)
    assert interpolate([0, 10, 20], [0.0, 1.0, 3.0], 30) == pytest.approx(5.0)


def test_eq1_rto_penalty_count_including_the_boundary():
    # E_q = 1 iff q < (n-1)m, and 0 with flow control.
    assert rto_penalty_count(1000, 7, 6000, False) == 0  # q = (n-1)m exactly: no penalty
    assert rto_penalty_count(1001, 7, 6000, False) == 1
    assert rto_penalty_count(999, 7, 6000, False) == 0
    assert rto_penalty_count(10**9, 64, 6000, True) == 0
    assert rto_penalty_count(10**6, 1, 0, False) == 0  # one phase never overlaps
    with pytest.raises(ValueError, match="queue length"):
        rto_penalty_count(1, 2, None, False)


def test_plogp_alltoall_eq5_and_eq7_by_hand():
    p = params()
    mdl = PlogP(p)
    # eq. 5: (P-1) g(m) + L ; eq. 7: (P-1)(g(m) + L); g(1000) = 15 us
    assert mdl.predict("alltoall_a", 8, 1000) == pytest.approx(7 * 15e-6 + 10e-6)
    assert mdl.predict("alltoall_b", 8, 1000) == pytest.approx(7 * (15e-6 + 10e-6))
    assert mdl.predict("A", 8, 500) < mdl.predict("B", 8, 500)  # ineq. 10


def test_plogp_br_eq4_and_eq9_with_patterns_and_penalty():
    pats = {f"xor{k}": [5e-6, 20e-6, 30e-6] for k in range(1, 8)}
    p = params(g_pattern=pats)
    br = PlogPBR(p)
    # A spans n = P-1 = 7 phases. m = 2000: (n-1)m = 12000 > q = 6000 -> E_q = 1
    assert br.predict("alltoall_a", 8, 2000) == pytest.approx(7 * 30e-6 + 10e-6 + 0.2)
    assert br.predict("alltoall_b", 8, 2000) == pytest.approx(7 * (30e-6 + 10e-6))
    assert br.predict("A", 8, 2000) > br.predict("B", 8, 2000)  # ineq. 12
    # m = 1000: (n-1)m = 6000 = q -> E_q = 0 (the boundary), and A < B (ineq. 11)
    assert br.predict("alltoall_a", 8, 1000) == pytest.approx(7 * 20e-6 + 10e-6)
    assert br.predict("A", 8, 1000) < br.predict("B", 8, 1000)
    # with flow control there is never a penalty
    assert PlogPBR(params(g_pattern=pats, flow_control=True)).predict("A", 8, 10**6) < 1.0


def test_logp_family_by_hand():
    p = params()
    assert Hockney.from_params(p).alpha == pytest.approx(10e-6 + 5e-6)
    assert Hockney.from_params(p).beta == pytest.approx(10e-6 / 1000)
    lp = LogP.from_params(p)
    assert lp.predict("B", 4, 123) == pytest.approx(3 * (2 * 1.5e-6 + 10e-6))
    assert lp.predict("A", 4, 123) == pytest.approx(2 * 5e-6 + 2 * 1.5e-6 + 10e-6)
    lgp = LogGP.from_params(p)
    assert lgp.predict("B", 2, 1001) == pytest.approx(2 * 1.5e-6 + 10e-6 + 1000 * 1e-8)
    assert lgp.predict("bcast_binomial", 8, 0) == pytest.approx(3 * (2 * 1.5e-6 + 10e-6))


def test_collective_formulas_and_errors():
    mdl = PlogP(params())
    assert mdl.predict("barrier", 5, 0) == pytest.approx(3 * (5e-6 + 10e-6))
    assert mdl.predict("bcast_binomial", 1, 10) == 0
    with pytest.raises(ValueError, match="power-of-two"):
        mdl.predict("alltoall_a", 6, 10)
    with pytest.raises(ValueError, match="unknown collective"):
        mdl.predict("allreduce", 8, 10)


def test_selection_inverts_with_the_penalty():
    pats = {f"xor{k}": [5e-6, 20e-6, 30e-6] for k in range(1, 8)}
    p = params(g_pattern=pats)
    assert select("alltoall", p, 8, 500, "plogp-br")[0] == "alltoall_a"
    assert select("alltoall", p, 8, 2000, "plogp-br")[0] == "alltoall_b"
    assert select("alltoall", p, 8, 2000, "plogp")[0] == "alltoall_a"
    assert set(predict_all("bcast", p, 8, 100)) == {"bcast_binomial", "bcast_scatter_allgather"}
    with pytest.raises(ValueError, match="unknown model"):
        make_model("nosuch", p)


def test_parameter_file_round_trip_and_errors(tmp_path):
    p = params(g_pattern={"xor1": [1e-6, 2e-6, 3e-6]})
    f = tmp_path / "m.json"
    p.save(f)
    q = PlogPParams.load(f)
    assert q == p
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match="malformed JSON"):
        PlogPParams.load(bad)
    bad.write_text(json.dumps({"format": "parcomm-plogp/1", "procs": 2}))
    with pytest.raises(ValueError, match="missing field"):
        PlogPParams.load(bad)
    d = json.loads(f.read_text())
    d["g"] = d["g"][:2]
    bad.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="'g' has 2 values for 3 sizes"):
        PlogPParams.load(bad)
    with pytest.raises(ValueError, match="cannot read"):
        PlogPParams.load(tmp_path / "nosuch.json")


# ------------------------------------------------------------ measurement

RATE = 1e9
PROP = 1e-6
O_S, O_R = 5e-6, 3e-6
ENV, HDR = 32, 40


def tx(nbytes):
    return nbytes * 8 / RATE


def known_platform():
    """Three hosts on a switch, raw framing (wire bytes = IP bytes), fixed overheads."""
    from parcomm.platform import star

    return star(
        3,
        rate_bps=RATE,
        propagation_s=PROP,
        framing="raw",
        buffer="64KiB",
        send_overhead={"fixed_s": O_S},
        recv_overhead={"fixed_s": O_R},
        tcp={"stack": "rfc"},  # known by construction: the RFC transport (no timestamp bytes) on an ideal wire
        timing_noise_s=0,
    )


def test_measurement_recovers_parameters_known_by_construction():
    from parcomm.measure import measure, sim_runner

    p = measure(sim_runner(known_platform(), 3), 3, [0, 64, 512, 1024], patterns="none", probe_queue=False)
    # By construction (one segment per message, two store-and-forward hops):
    # the sender's CPU paces back-to-back sends, so g(0) = o_s;
    # RTT(0) = 2(o_s + o_r + 2 tx(72) + 2 prop) = 2(L + g(0));
    # g(m) - g(0) = 2 (tx(m + 72) - tx(72)).
    g0 = O_S
    L = O_R + 2 * tx(ENV + HDR) + 2 * PROP
    assert p.g[0] == pytest.approx(g0, rel=0.05)
    assert pytest.approx(L, rel=0.05) == p.L
    for m, gm in zip(p.sizes, p.g):
        assert gm == pytest.approx(g0 + 2 * (tx(m + ENV + HDR) - tx(ENV + HDR)), rel=0.05), m
    assert all(o == pytest.approx(O_S, rel=0.05) for o in p.o_s)
    assert all(o == pytest.approx(O_R, rel=0.05) for o in p.o_r)


def test_queue_length_estimate_is_near_the_port_buffer():
    from parcomm.measure import measure, sim_runner
    from parcomm.platform import opteron_cluster

    p = measure(sim_runner(opteron_cluster(4, jitter_s=0), 4), 4, [0, 65536, 262144], patterns="none")
    # The port holds 128 KiB of IP packets, 1460/1500 of it payload (q is in payload bytes).
    assert p.queue_bytes == pytest.approx(128 * 1024 * 1460 / 1500, rel=0.03)
    assert p.meta["queue_overflow_seen"] is True


def test_pattern_gaps_on_a_symmetric_switch_match_the_pair_gap():
    from parcomm.measure import measure, sim_runner
    from parcomm.platform import opteron_cluster

    p = measure(sim_runner(opteron_cluster(4, jitter_s=0), 4), 4, [0, 4096], probe_queue=False)
    assert set(p.g_pattern) == {"xor1", "xor2", "xor3"}
    for vals in p.g_pattern.values():
        # Every XOR pattern is a permutation through a non-blocking switch (eq. 3 gives ~ g(m, C_e)).
        assert vals[-1] == pytest.approx(p.g[-1], rel=0.35)


def test_model_cli_errors_are_one_line(tmp_path, capsys):
    from parcomm.cli import main

    assert main(["model", "select", "alltoall", "--params", str(tmp_path / "none.json"), "--procs", "8"]) == 2
    assert "cannot read parameter file" in capsys.readouterr().err
    f = tmp_path / "p.json"
    params().save(f)
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "6"]) == 2
    assert "power-of-two" in capsys.readouterr().err
    assert main(["model", "predict", "C", "--params", str(f), "--procs", "8"]) == 2
    assert "unknown collective" in capsys.readouterr().err
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "8", "--size", "2000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["best"] == "alltoall_b" and set(out["predicted_s"]) == {"alltoall_a", "alltoall_b"}


def test_measure_cli_runs_unchanged_over_local_tcp_processes(tmp_path):
    from parcomm.cli import main

    out = tmp_path / "m.json"
    rc = main(
        [
            "measure",
            "--backend",
            "local",
            "--procs",
            "2",
            "--sizes",
            "0,1KiB",
            "--patterns",
            "none",
            "--rel-ci",
            "10",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    p = PlogPParams.load(out)
    assert p.meta["backend"] == "local" and p.sizes == [0, 1024]
    # Real round trips on a loaded machine are noisy: only sanity here. L may come out 0
    # (L = RTT(0)/2 - g(0), clamped): on a busy machine a burst of 16 sends is slow, g(0) large.
    assert 0 <= p.L < 1 and all(g >= 0 for g in p.g) and p.g[0] > 0


def test_measure_cli_needs_procs_for_real_backends(tmp_path, capsys):
    from parcomm.cli import main

    assert main(["measure", "--backend", "mpi", "--out", str(tmp_path / "m.json")]) == 2
    assert "--procs" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["predict", "A", "--procs", "8"], "malformed JSON"),
        (["select", "alltoall", "--procs", "8"], "malformed JSON"),
    ],
)
def test_model_cli_malformed_parameter_file(tmp_path, capsys, argv, needle):
    from parcomm.cli import main

    f = tmp_path / "bad.json"
    f.write_text("{not json")
    assert main(["model", *argv, "--params", str(f)]) == 2
    err = capsys.readouterr().err
    assert needle in err and str(f) in err


def test_model_cli_wrong_or_incomplete_parameter_file(tmp_path, capsys):
    from parcomm.cli import main

    f = tmp_path / "other.json"
    f.write_text(json.dumps({"format": "something-else"}))
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "8"]) == 2
    assert "not a parcomm PlogP parameter file" in capsys.readouterr().err
    d = json.loads(params().to_json())
    del d["g"]
    f.write_text(json.dumps(d))
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "8"]) == 2
    assert "missing field(s) g" in capsys.readouterr().err
    d = json.loads(params().to_json())
    d["g"] = d["g"][:-1]
    f.write_text(json.dumps(d))
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "8"]) == 2
    assert "'g' has 2 values for 3 sizes" in capsys.readouterr().err


def test_model_cli_unknown_algorithm_model_and_bad_procs(tmp_path, capsys):
    from parcomm.cli import main

    f = tmp_path / "p.json"
    params().save(f)
    assert main(["model", "predict", "alltoall_c", "--params", str(f), "--procs", "8"]) == 2
    assert "unknown collective or algorithm 'alltoall_c'" in capsys.readouterr().err
    assert main(["model", "predict", "A", "--params", str(f), "--procs", "12"]) == 2
    assert "power-of-two" in capsys.readouterr().err
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "8", "--model", "logq"]) == 2
    assert "unknown model 'logq'" in capsys.readouterr().err
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "0"]) == 2
    assert "positive integer" in capsys.readouterr().err


def test_model_cli_predict_without_q_still_gives_the_other_models(tmp_path, capsys):
    from parcomm.cli import main

    f = tmp_path / "p.json"
    params(queue_bytes=None).save(f)
    assert main(["model", "predict", "A", "--params", str(f), "--procs", "8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "plogp" in out["predicted_s"] and "queue length q" in out["unavailable"]["plogp-br"]
    assert main(["model", "select", "alltoall", "--params", str(f), "--procs", "8"]) == 2
    assert "queue length q" in capsys.readouterr().err
