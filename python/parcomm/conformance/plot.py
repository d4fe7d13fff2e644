"""Figures of the suite: the fidelity scatter and a scenario's per-flow traces."""

from __future__ import annotations

from typing import Any

__all__ = ["plot_fidelity", "plot_trace"]

_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")


def plot_fidelity(doc: dict, path: str) -> None:
    """Simulated vs emulated completion time, log-log, one point per scenario and profile.

    The 1:1 line and the ±25 % band; hollow markers: scenarios whose
    emulated runs spread more than the noise limit (they cannot decide).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["scenarios"] if r.get("emu")]
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    lo, hi = float("inf"), 0.0
    for i, prof in enumerate(doc["profiles"]):
        pts = [(r["emu"]["median_s"], r["sim"][prof]["median_s"], r["noisy"]) for r in rows if prof in r["sim"]]
        if not pts:
            continue
        c = _COLORS[i % len(_COLORS)]
        s = next((x for x in doc["summary"] if x["profile"] == prof), None)
        label = (
            prof
            if not s or s["median_abs_error"] is None
            else (f"{prof}: median |error| {s['median_abs_error']:.0%}, {s['within_25pct']:.0%} within 25 %")
        )
        solid = [(x, y) for x, y, n in pts if not n]
        hollow = [(x, y) for x, y, n in pts if n]
        if solid:
            ax.scatter(*zip(*solid), color=c, s=28, label=label, zorder=3)
        if hollow:
            ax.scatter(
                *zip(*hollow),
                facecolors="none",
                edgecolors=c,
                s=28,
                zorder=3,
                label=f"{prof}: emulation too noisy to decide",
            )
        for x, y, _ in pts:
            lo, hi = min(lo, x, y), max(hi, x, y)
    if hi > 0:
        lo, hi = lo / 1.5, hi * 1.5
        xs = [lo, hi]
        ax.plot(xs, xs, color="black", lw=1, label="simulator = kernel")
        ax.fill_between(xs, [x / 1.25 for x in xs], [x * 1.25 for x in xs], color="grey", alpha=0.2, label="±25 %")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("real Linux TCP (emulation), median completion time [s]")
    ax.set_ylabel("simulator, completion time [s]")
    ax.set_title("Conformance: the simulator against the kernel, one point per scenario")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_trace(data: dict[str, Any], path: str) -> None:
    """Congestion window per flow over time, kernel above simulator, losses marked.

    Kernel: cwnd from ``tcp:tcp_probe`` at each incoming segment; ticks at
    each ``tcp_retransmit_skb``; red crosses where a flow enters Loss (an
    RTO). Simulator: cwnd after each ACK and timer; ticks where its
    retransmission count grows; red crosses at its RTO timeouts.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(11, 7.5), sharex=True)
    emu, sim = data.get("emu") or {}, data.get("sim") or {}
    for ax, side, title in (
        (axes[0], emu, "real Linux TCP (emulation)"),
        (axes[1], sim, f"simulator ({data.get('profile')})"),
    ):
        flows = side.get("flows", [])
        for i, fl in enumerate(flows):
            c = plt.cm.tab20(i % 20)
            ax.step(fl["t"], fl["cwnd"], where="post", lw=0.9, color=c)
            if fl.get("retransmits"):
                ax.plot(fl["retransmits"], [0] * len(fl["retransmits"]), "|", color=c, ms=8)
            if fl.get("timeouts"):
                ax.plot(
                    fl["timeouts"],
                    [fl["cwnd_at_timeouts"][j] for j in range(len(fl["timeouts"]))],
                    "x",
                    color="red",
                    ms=6,
                )
        note = side.get("note")
        ax.set_title(f"{title}: {len(flows)} flows" + (f" ({note})" if note else ""), fontsize=10)
        ax.set_ylabel("cwnd [segments]")
        ax.grid(True, alpha=0.3)
    end = max([t for side in (emu, sim) for fl in side.get("flows", []) for t in fl["t"][-1:]] or [1.0])
    axes[1].set_xlim(-0.02 * end, end * 1.03)  # the kernel's samples start before the go; the run starts at 0
    axes[1].set_xlabel("time since start [s]")
    fig.suptitle(
        f"{data.get('scenario')}: cwnd per flow; | retransmission, x RTO "
        f"(kernel {data.get('emu_s', 0) * 1e3:.1f} ms, simulator {data.get('sim_s', 0) * 1e3:.1f} ms)",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
