"""Seed 002's heat solver: kernel, decomposition, solver on every backend, model, benchmarks, CLI, study."""

import json
import math

import numpy as np
import pytest
from parcomm.apps.heat.bench import cross_segment_pairs, pairs_program, segment_pairs
from parcomm.apps.heat.decomposition import Decomposition, place, placement_stats, segment_groups
from parcomm.apps.heat.kernel import HeatKernel, StabilityError, naive_step
from parcomm.apps.heat.solver import heat_program, initial_block, sine_decay_factor, solve_serial, summarize
from parcomm.cli import main
from parcomm.comm import run_sim
from parcomm.models import StencilModel
from parcomm.models.stencil import implied_parameters
from parcomm.platform import as_platform

# --- kernel ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,block", [((7, 9), 64), ((50, 33), 1024), ((130, 130), 512 * 1024)])
def test_blocked_kernel_equals_naive_expression_bit_for_bit(shape, block):
    rng = np.random.default_rng(3)
    u = rng.random(shape)
    a, b = np.zeros_like(u), np.zeros_like(u)
    k = HeatKernel(u.shape, 0.23, block_bytes=block)
    k.update(u, a)
    naive_step(u, b, 0.23)
    assert np.array_equal(a, b)
    c = np.zeros_like(u)
    assert k.interior(u, c) + k.boundary(u, c) == (shape[0] - 2) * (shape[1] - 2)
    assert np.array_equal(c, b)


@pytest.mark.parametrize("shape", [(3, 3), (7, 9), (50, 33), (130, 131), (402, 258)])
@pytest.mark.parametrize("r", [0.05, 0.2, 0.23, 0.25])
def test_rust_kernel_equals_numpy_kernel_bit_for_bit(shape, r):
    from parcomm.apps.heat.kernel import RUST_KERNEL

    assert RUST_KERNEL, "parcomm._core lacks heat_update: rebuild"
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    u = rng.random(shape) * 100 - 50
    fast, ref = HeatKernel(shape, r), HeatKernel(shape, r, backend="numpy")
    assert fast.backend == "rust" and ref.backend == "numpy"
    a, b = np.zeros_like(u), np.zeros_like(u)
    fast.update(u, a)
    ref.update(u, b)
    assert np.array_equal(a, b) and a.tobytes() == b.tobytes()
    # interior + boundary ring (the solver's overlapped order) and several steps
    c = np.zeros_like(u)
    if min(shape) > 2:
        assert fast.interior(u, c) + fast.boundary(u, c) == (shape[0] - 2) * (shape[1] - 2)
        assert c.tobytes() == b.tobytes()
    # several steps with the fixed boundary temperature 0 in the halo ring (the numpy
    # kernel resets halo columns to 0 after its flat pass; the Rust one never touches them)
    u[0, :] = u[-1, :] = u[:, 0] = u[:, -1] = 0.0
    x, y, p, q = u.copy(), np.zeros_like(u), u.copy(), np.zeros_like(u)
    for _ in range(5):
        fast.update(x, y)
        ref.update(p, q)
        x, y, p, q = y, x, q, p
    assert x.tobytes() == p.tobytes()


def test_rust_kernel_checks_its_arguments():
    from parcomm import _core

    u = np.zeros((6, 6))
    with pytest.raises(ValueError, match="share memory"):
        _core.heat_update(u, u, 0.2, 1, 5, 1, 5)
    with pytest.raises(ValueError, match="stability limit"):
        _core.heat_update(u, np.zeros_like(u), 0.3, 1, 5, 1, 5)
    with pytest.raises(ValueError, match="interior"):
        _core.heat_update(u, np.zeros_like(u), 0.2, 0, 5, 1, 5)
    with pytest.raises(ValueError, match="but v is"):
        _core.heat_update(u, np.zeros((6, 7)), 0.2, 1, 5, 1, 5)
    with pytest.raises(ValueError, match="writable"):
        ro = np.zeros_like(u)
        ro.flags.writeable = False
        _core.heat_update(u, ro, 0.2, 1, 5, 1, 5)
    with pytest.raises((ValueError, BufferError)):
        _core.heat_update(u.astype(np.float32), np.zeros_like(u), 0.2, 1, 5, 1, 5)
    # a non-contiguous view takes the numpy path of HeatKernel, same bits
    big = np.random.default_rng(2).random((10, 12))
    view = big[:, ::2]
    k = HeatKernel(view.shape, 0.2)
    a, b = np.zeros(view.shape), np.zeros(view.shape)
    k.update(view, a)
    naive_step(np.ascontiguousarray(view), b, 0.2)
    assert np.array_equal(a, b)


def test_solver_uses_the_rust_kernel_by_default():
    from parcomm.apps.heat.kernel import RUST_KERNEL

    assert RUST_KERNEL and HeatKernel((10, 10), 0.2).backend == "rust"


def test_kernel_allocates_nothing_per_step():
    import tracemalloc

    u = np.random.default_rng(0).random((402, 402))
    v = np.zeros_like(u)
    k = HeatKernel(u.shape, 0.2)
    k.update(u, v)
    tracemalloc.start()
    for _ in range(5):
        k.update(u, v)
        u, v = v, u
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 1024  # views and scalars only; the grid is 1.3 MB


@pytest.mark.parametrize("r", [0.2500001, 0.3, 0.0, -1.0, float("nan")])
def test_stability_limit_is_a_clear_error(r):
    with pytest.raises(StabilityError, match="stability limit|positive"):
        HeatKernel((10, 10), r)
    with pytest.raises(StabilityError):
        solve_serial(8, 1, r)


def test_at_the_stability_limit_the_scheme_stays_bounded_and_beyond_it_blows_up():
    N = 32
    u0 = np.zeros((N + 2, N + 2))
    u0[1:-1, 1:-1] = np.random.default_rng(1).random((N, N))
    assert np.abs(solve_serial(N, 400, 0.25)).max() <= 1.0
    # beyond 1/4 (bypassing the check) the checkerboard mode grows: why the limit is enforced
    u, v = u0.copy(), np.zeros_like(u0)
    for _ in range(400):
        naive_step(u, v, 0.3)
        u, v = v, u
    assert np.abs(u).max() > 1e3


def test_sine_mode_decays_at_the_analytic_rate():
    N, r, steps = 63, 0.2, 200
    out = solve_serial(N, steps, r, init="sine")
    u0 = initial_block(N, slice(0, N), slice(0, N), "sine")
    ratio = out / u0
    discrete, continuous = sine_decay_factor(N, r, steps)
    # the scheme's own eigenvalue: exact to rounding
    assert np.allclose(ratio, discrete, rtol=1e-9, atol=0)
    # the PDE's exp(-2 pi^2 alpha t): within the O(h^2) discretization error
    h = 1.0 / (N + 1)
    rel = abs(discrete / continuous - 1)
    # the exponent E = 2 pi^2 r h^2 steps is off by a relative O((pi h)^2): space (pi h)^2/12, time pi^2 r h^2
    exponent = 2 * math.pi**2 * r * h * h * steps
    assert 0 < rel < exponent * (math.pi * h) ** 2


def test_kernel_benchmark_reports_rust_numpy_and_copy_bound_from_one_run():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "heat_kernel.py"
    spec = importlib.util.spec_from_file_location("heat_kernel_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    row = mod.measure(64, 2)
    for k in (
        "copy_ns_per_point",
        "scale_ns_per_point",
        "rust_ns_per_point",
        "numpy_ns_per_point",
        "rust_of_bound",
        "numpy_of_bound",
        "rust_speedup_over_numpy",
    ):
        assert row[k] > 0
    assert row["bound_s"] == min(row["copy_s"], row["scale_s"])
    assert row["rust_of_bound"] == pytest.approx(row["bound_s"] / row["rust_s"])


# --- decomposition --------------------------------------------------------------------------


def test_decomposition_checks_and_neighbours():
    with pytest.raises(ValueError, match="must divide"):
        Decomposition(100, 3)
    d = Decomposition(12, 3)
    assert d.n == 4 and d.tasks == 9
    assert d.neighbours(4) == {0: 1, 1: 7, 2: 3, 3: 5}
    assert d.neighbours(0) == {1: 3, 3: 1}
    assert len(d.edges()) == 12


def test_placements_use_distinct_hosts_and_blocks_cut_fewer_messages():
    plat = as_platform("segments:16")
    groups = segment_groups(plat)
    d = Decomposition(330, 11)
    stats = {}
    for how in ("linear", "round_robin", "blocks"):
        hosts = place(d, groups, how)
        assert len(set(hosts)) == 121 and all(0 <= h < 130 for h in hosts)
        stats[how] = placement_stats(d, hosts, groups)
    assert stats["round_robin"]["crossing_router"] == 440  # every boundary message crosses the router
    assert stats["blocks"]["crossing_router"] < stats["linear"]["crossing_router"] < 440
    with pytest.raises(ValueError, match="unknown placement"):
        place(d, groups, "random")


# --- solver ---------------------------------------------------------------------------------


@pytest.mark.parametrize("N,M", [(12, 1), (12, 2), (12, 3), (12, 4), (12, 6), (30, 5), (66, 11)])
def test_parallel_equals_serial_bit_for_bit(N, M):
    steps = 9
    serial = solve_serial(N, steps, 0.2)
    # the default (fused Rust) kernel and the numpy reference: the same bits, serial or cut into tasks
    assert serial.tobytes() == solve_serial(N, steps, 0.2, kernel="numpy").tobytes()
    res = run_sim(heat_program, f"star:{M * M}", kwargs={"N": N, "M": M, "steps": steps, "gather": True, "mflops": 4.6})
    assert res.results[0]["kernel"] == "rust"
    assert np.array_equal(res.results[0]["field"], serial)
    assert res.results[0]["max"] == serial.max()
    ref = run_sim(
        heat_program, f"star:{M * M}", kwargs={"N": N, "M": M, "steps": steps, "gather": True, "kernel": "numpy"}
    )
    assert ref.results[0]["field"].tobytes() == serial.tobytes()


def test_blocking_order_gives_the_same_field():
    serial = solve_serial(16, 5, 0.25, init="sine")
    res = run_sim(
        heat_program,
        "star:4",
        kwargs={"N": 16, "M": 2, "steps": 5, "r": 0.25, "init": "sine", "gather": True, "overlap": False},
    )
    assert np.array_equal(res.results[0]["field"], serial)


def test_simulated_compute_time_follows_the_host_mflops():
    # one task, no neighbours: the time is exactly C N^2 steps / F
    res = run_sim(heat_program, "star:1", kwargs={"N": 40, "M": 1, "steps": 5, "mflops": 4.6})
    s = summarize(res.results, 40, 5)
    assert s["time_s"] == pytest.approx(6 * 40 * 40 * 5 / 4.6e6, rel=1e-6)
    assert s["mflops"] == pytest.approx(4.6, rel=1e-6)


def test_paper_platform_run_reports_communication():
    plat = as_platform("segments:4x2")
    res = run_sim(heat_program, plat, 4, kwargs={"N": 40, "M": 2, "steps": 3, "mflops": 4.6, "trace": True})
    s = summarize(res.results, 40, 3)
    assert 0 < s["comm_share"] < 1 and s["max_temperature"] == solve_serial(40, 3, 0.2).max()
    assert len(res.results[0]["step_end_s"]) == 3


def test_real_mpi_4_ranks_agree_with_serial():
    from parcomm.comm import run_mpi

    N, steps = 32, 20
    serial = solve_serial(N, steps, 0.2)
    res = run_mpi(
        "parcomm.apps.heat.solver:heat_program", 4, kwargs={"N": N, "M": 2, "steps": steps, "gather": True}, timeout=60
    )
    assert np.array_equal(res.results[0]["field"], serial)
    assert len(res.results) == 4 and all(x["kernel"] == "rust" for x in res.results)
    assert summarize(res.results, N, steps)["mflops"] > 0


def test_local_tcp_processes_agree_with_serial_and_size_mismatch_is_clear():
    from parcomm.comm import CommError, run_local

    serial = solve_serial(20, 6, 0.2)
    res = run_local("parcomm.apps.heat.solver:heat_program", 4, kwargs={"N": 20, "M": 2, "steps": 6, "gather": True})
    assert np.array_equal(res.results[0]["field"], serial)
    with pytest.raises(CommError, match="needs 9 ranks"):
        run_sim(heat_program, "star:4", kwargs={"N": 12, "M": 3, "steps": 1})


# --- model ----------------------------------------------------------------------------------


def test_model_formulas_and_table3_limits():
    m = StencilModel(F=4.6e6, B=5e4, C=6)
    N, M = 330, 11
    assert m.step_time(N, M) == pytest.approx(6 * N * N / (4.6e6 * M * M) + 4 * N / (5e4 * M))
    assert m.performance(N, M) == pytest.approx(M * M * 4.6e6 / (1 + 4 * 4.6e6 * M / (6 * 5e4 * N)))
    lim = m.limits(N, M)
    assert lim["N->inf"] == M * M * 4.6e6 and lim["F->inf"] == pytest.approx(6 * 5e4 * N * M / 4)
    assert StencilModel(F=4.6e6, B=5e4).performance(1e9, M) == pytest.approx(lim["N->inf"], rel=1e-4)
    assert StencilModel(F=1e15, B=5e4).performance(N, M) == pytest.approx(lim["F->inf"], rel=1e-4)
    assert StencilModel(F=4.6e6, B=1e15).performance(N, M) == pytest.approx(lim["B->inf"], rel=1e-4)


def test_model_fit_recovers_b_and_latency_and_paper_implied_parameters():
    B, L = StencilModel.fit_comm(
        [100, 1000, 5000], [L0 + m / (8 * 3e4) for L0, m in [(1e-3, 100), (1e-3, 1000), (1e-3, 5000)]]
    )
    assert pytest.approx(3e4) == B and pytest.approx(1e-3) == L
    truth = StencilModel(F=0.5e6, B=8000)
    pts = [(n, truth.performance(n, 11)) for n in (330, 2640)]
    imp = implied_parameters(11, pts)
    assert imp["F"] == pytest.approx(0.5e6) and imp["B"] == pytest.approx(8000)


def test_shared_segment_model_shares_b_and_overlaps_the_interior():
    m = StencilModel.shared_segment(F=4.6e6, B_idle=1e5, latency_s=1e-3, m_seg=50)
    assert pytest.approx(4 * 1e5 / 50) == m.B and m.overlap and m.latency_s == 1e-3
    N, M = 330, 11
    n = N / M
    comm = 4 * 1e-3 + 50 * n / 1e5  # the busiest segment's 50 messages, one after the other
    assert m.comm_time(N, M) == pytest.approx(comm)
    interior, ring = 6 * (n - 2) ** 2 / 4.6e6, 6 * (n * n - (n - 2) ** 2) / 4.6e6
    assert m.step_time(N, M) == pytest.approx(max(interior, comm) + ring)
    # compute-bound end: the exchange hides under the interior
    big = StencilModel.shared_segment(F=4.6e6, B_idle=1e9, latency_s=0.0, m_seg=50)
    assert big.step_time(2640, 11) == pytest.approx(6 * 240 * 240 / 4.6e6)
    # the paper's form drops latency and overlap
    p = m.paper_form()
    assert not p.overlap and p.latency_s == 0 and p.step_time(N, M) == pytest.approx(6 * n * n / 4.6e6 + 4 * n / p.B)
    assert StencilModel.fit_F(900, 3, 6 * 900 * 3 / 4.6e6) == pytest.approx(4.6e6)
    with pytest.raises(ValueError):
        StencilModel.shared_segment(4.6e6, 1e5, 0.0, 2)


def test_f_fitted_from_a_one_task_run_is_the_hosts_rate():
    plat = as_platform("segments:16")
    one = run_sim(heat_program, plat, 1, hosts=[0], kwargs={"N": 60, "M": 1, "steps": 2, "mflops": 4.6})
    F = StencilModel.fit_F(60 * 60, 2, one.results[0]["elapsed_s"])
    assert pytest.approx(4.6e6, rel=1e-6) == F


# --- §5 benchmarks --------------------------------------------------------------------------


def test_pairs_benchmark_knee_and_contention_on_the_paper_platform():
    plat = as_platform("segments:16")
    groups = segment_groups(plat)
    sizes = [16, 1000, 10000]
    one = run_sim(pairs_program, plat, 2, hosts=segment_pairs(groups, 1), kwargs={"sizes": sizes, "repeats": 2})
    four = run_sim(
        pairs_program, plat, 8, hosts=segment_pairs(groups, 4), kwargs={"sizes": sizes, "npairs": 4, "repeats": 2}
    )
    t1 = one.results[0]["times_s"]
    t4 = max(x["times_s"][2] for x in four.results if x)
    assert t1[1] / t1[0] < 2.5 and t1[2] / t1[1] > 4  # flat up to ~1000 B, proportional above
    assert t4 > 1.5 * t1[2]  # contention inside a segment
    hosts = cross_segment_pairs(groups, 8)
    assert len(set(hosts)) == 16
    with pytest.raises(ValueError):
        cross_segment_pairs(groups, 9)


# --- CLI ------------------------------------------------------------------------------------


def test_cli_heat_run_serial_and_sim_json(capsys):
    assert main(["heat", "run", "--backend", "serial", "-N", "24", "--steps", "3", "--json"]) == 0
    ser = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "heat",
                "run",
                "--backend",
                "sim",
                "-N",
                "24",
                "-M",
                "2",
                "--steps",
                "3",
                "--platform",
                "segments:2x2",
                "--json",
            ]
        )
        == 0
    )
    sim = json.loads(capsys.readouterr().out)
    assert sim["max_temperature"] == ser["max_temperature"]
    assert sim["mflops"] > 0 and 0 <= sim["comm_share"] <= 1 and sim["tasks"] == 4


def test_cli_heat_kernel_choice_gives_the_same_result(capsys):
    out = {}
    for kernel in ("rust", "numpy"):
        assert (
            main(
                [
                    "heat",
                    "run",
                    "--backend",
                    "sim",
                    "-N",
                    "24",
                    "-M",
                    "2",
                    "--steps",
                    "4",
                    "--platform",
                    "segments:2x2",
                    "--kernel",
                    kernel,
                    "--json",
                ]
            )
            == 0
        )
        out[kernel] = json.loads(capsys.readouterr().out)
        assert out[kernel]["kernel"] == kernel
    assert out["rust"]["max_temperature"] == out["numpy"]["max_temperature"]
    assert out["rust"]["time_s"] == out["numpy"]["time_s"]  # simulated time does not depend on the kernel


def test_cli_heat_errors_are_one_line(capsys):
    assert main(["heat", "run", "-N", "100", "-M", "3"]) == 2
    assert "must divide" in capsys.readouterr().err
    assert main(["heat", "run", "--r", "0.3", "--backend", "serial"]) == 2
    assert "stability limit" in capsys.readouterr().err


def test_cli_heat_model_and_bench_json(capsys):
    assert main(["heat", "model", "-N", "330,2640", "--bandwidth", "50000", "--latency", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"][1]["mflops"] > out["rows"][0]["mflops"]
    assert main(["heat", "bench", "--pairs", "1,2", "--sizes", "16,1000", "--repeats", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 4


# --- study ----------------------------------------------------------------------------------


def test_hironaka_study_quick_writes_its_report(tmp_path):
    from parcomm.studies import run_studies
    from parcomm.studies.framework import STUDIES

    assert STUDIES["hironaka"] == "parcomm.studies.hironaka"
    (rep,) = run_studies(["hironaka"], tmp_path, quick=True, seed=1)
    out = tmp_path / "hironaka"
    sweep = json.loads((out / "fig3_fig4.json").read_text())
    assert [r["N"] for r in sweep] == [330, 660, 1320, 2640]
    assert sweep[-1]["mflops"] > sweep[0]["mflops"]  # larger N, closer to M^2 F (Table 3)
    assert len(rep.figures) == 5 and all(open(f, "rb").read(4) == b"\x89PNG" for f in rep.figures)
    verdicts = {c.quantity: c.agrees for c in rep.comparisons}
    assert verdicts["Fig. 5: knee near 1000 bytes (1 pair)"] is True
    # the model beside the simulator across the whole sweep, errors reported, paper form and refined variant
    model = json.loads((out / "model.json").read_text())
    assert [r["N"] for r in model] == [330, 660, 1320, 2640]
    for r in model:
        for label in ("paper", "shared_segment"):
            assert math.isfinite(r[f"{label}_error"]) and math.isfinite(r[f"{label}_error_vs_median"])
            assert r[f"{label}_mflops"] / r["sim_mflops"] - 1 == pytest.approx(r[f"{label}_error"])
    params = {p["model"]: p for p in json.loads((out / "model_parameters.json").read_text())}
    assert params["paper"]["latency_s"] == 0 and not params["paper"]["overlap"]
    assert params["paper"]["F_flops"] == pytest.approx(4.6e6, rel=1e-6)  # fitted from the one-task run
    assert params["shared_segment"]["B_values_per_s"] == pytest.approx(
        4 * params["paper"]["B_values_per_s"] / params["shared_segment"]["m_seg"]
    )
    assert any(q.startswith("model 'shared_segment'") for q in verdicts)
    assert any(q.startswith("time per step, N = 2640") for q in verdicts)
    assert "paper vs parcomm" in (tmp_path / "index.html").read_text()
