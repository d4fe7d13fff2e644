"""Issue 30's local attacks, replayed against any parcomm checkout (``replay_attacks.py --local``).

Another user of the machine (played by root with ``chown 65534``): a FIFO and links in a shared
``--rendezvous-dir``, a FIFO and a foreign file as the key file. A launcher killed by -9 (``run
local``, ``bcast --local`` with versitygw, ``mine gen``): what keeps running and what stays
behind after the next run. And the input reproducers (storage profiles, a matrix's over-long
integer, ``mine gen -T 1e12``). Each case runs the checkout's code in a child process bounded in
time; only processes started here are ended, by pid.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

NOBODY = 65534
LIMIT_S = 20.0  # a case still running then counts as hung


def _env(tree: Path, **extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree / "python"), **extra}


def _snippet(tree: Path, code: str, *args: str, timeout: float = LIMIT_S) -> tuple[str, float]:
    """Run ``code`` with the checkout on the path: (its last output line, or "hung", seconds)."""
    t0 = time.monotonic()
    try:
        run = subprocess.run(
            [sys.executable, "-c", code, *args], env=_env(tree), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"hung (killed at {timeout:g} s)", time.monotonic() - t0
    lines = (run.stdout + run.stderr).strip().splitlines()
    return (lines[-1] if lines else f"exit {run.returncode}")[:160], time.monotonic() - t0


_RV = """
import os, sys
from parcomm.apps.bcast import rendezvous as rv
from parcomm.auth import JobKey
meet, world = sys.argv[1], int(sys.argv[2])
for plant in sys.argv[3:]:  # NAME=TARGET: another user's link (PID: this process's pid)
    name, target = plant.split("=", 1)
    link = os.path.join(meet, name.replace("PID", str(os.getpid())))
    os.symlink(target, link)
    os.chown(link, 65534, 65534, follow_symlinks=False)
try:
    print("table:", rv.via_directory(meet, 0, world, ("127.0.0.1", 4000), key=JobKey.generate(), job="j", timeout=3))
except Exception as e:
    print(type(e).__name__ + ":", e)
"""


def rendezvous_fifo(tree: Path, work: Path) -> dict:
    meet = work / "meet-fifo"
    meet.mkdir()
    meet.chmod(0o1777)
    os.mkfifo(meet / "rank-1.json")
    os.chown(meet / "rank-1.json", NOBODY, NOBODY)
    out, took = _snippet(tree, _RV, str(meet), "2")
    return {"attack": "FIFO in --rendezvous-dir (timeout 3 s)", "outcome": out, "seconds": round(took, 1)}


def rendezvous_symlink(tree: Path, work: Path) -> dict:
    meet = work / "meet-link"
    meet.mkdir()
    meet.chmod(0o1777)
    victim = work / "root-owned"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    # the old predictable temp name (the attacker reads the pid from /proc) and the entry itself
    out, took = _snippet(tree, _RV, str(meet), "1", f".rank-0.json.PID.tmp={victim}")
    return {
        "attack": "symlink at the rendezvous temp name",
        "victim_overwritten": victim.read_text() != "precious\n",
        "outcome": out,
    }


_KEY = """
import sys
from parcomm.auth import JobKey
try:
    JobKey.from_file(sys.argv[1]); print("accepted")
except Exception as e:
    print(type(e).__name__ + ":", e)
"""


def key_fifo(tree: Path, work: Path) -> dict:
    fifo = work / "fifo.key"
    os.mkfifo(fifo, 0o600)
    out, took = _snippet(tree, _KEY, str(fifo))
    return {"attack": "FIFO as the key file", "outcome": out, "seconds": round(took, 1)}


def key_foreign(tree: Path, work: Path) -> dict:
    key = work / "foreign.key"
    key.write_text(secrets.token_hex(32) + "\n")
    key.chmod(0o600)
    os.chown(key, NOBODY, NOBODY)
    out, _ = _snippet(tree, _KEY, str(key))
    return {"attack": "key file owned by another user", "outcome": out}


# ------------------------------------------------------------------ kill -9 of the launcher


def _tagged(tag: str) -> list[int]:
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if f"REPLAY_TAG={tag}".encode() in f.read().split(b"\0"):
                        found.append(int(d))
            except OSError:
                pass
    return found


def _kill9(argv: list[str], env: dict, ready, tag: str, cwd: Path) -> tuple[int, int]:
    """Start, wait for ``ready()``, kill -9 the launcher: (its processes, those left 5 s later)."""
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while not ready() and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.1)
        started = len(_tagged(tag)) - 1
        proc.kill()
        proc.wait()
        time.sleep(5)
        return started, len(_tagged(tag))
    finally:
        for pid in _tagged(tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _entries(tmp: Path, prefix: str) -> list[str]:
    return sorted(n for n in os.listdir(tmp) if n.startswith(prefix))


_HOLD = """import asyncio, os, pathlib
async def hold(comm):
    pathlib.Path(os.environ["HOLD_DIR"], f"started-{comm.rank}").touch()
    await asyncio.sleep(60)
"""


def kill9_run_local(tree: Path, work: Path) -> dict:
    """The launcher's temporary directory is private to the case (TMPDIR), so what stays is its."""
    (work / "hold.py").write_text(_HOLD)
    tmp = work / "tmp"
    tmp.mkdir()
    tag = secrets.token_hex(8)
    env = {**_env(tree, REPLAY_TAG=tag, TMPDIR=str(tmp), HOLD_DIR=str(work))}
    env["PYTHONPATH"] = f"{tree / 'python'}{os.pathsep}{work}"
    argv = [sys.executable, "-m", "parcomm", "run", "local", "-n", "3", "--program", "hold:hold", "--timeout", "90s"]
    started, left = _kill9(argv, env, lambda: len(list(work.glob("started-*"))) >= 3, tag, work)
    stayed = _entries(tmp, "pymp-")
    subprocess.run([sys.executable, "-m", "parcomm", "run", "local", "-n", "2", "--program", "barrier"],
                   env=_env(tree, TMPDIR=str(tmp)), cwd=work, capture_output=True, timeout=120)
    after = [n for n in stayed if (tmp / n).exists()]
    return {"attack": "kill -9 of `run local` (3 ranks running)", "processes": started, "left_after_5s": left,
            "pymp_dirs_left": len(stayed), "after_next_run": len(after)}


def _downloading(tmp: Path) -> int:
    """Nodes of `bcast --local` reporting progress (past their start-up)."""
    dirs = [tmp / n for n in _entries(tmp, "parcomm-bcast-")]
    return max((len(list(d.glob("progress-*.json"))) for d in dirs if d.is_dir()), default=0)


def kill9_bcast_local(tree: Path, work: Path) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from parcomm.apps.bcast import manifest as mf
    from parcomm.apps.bcast.proxy import PacingProxy
    from parcomm.apps.bcast.s3 import S3Client
    from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw

    tag = secrets.token_hex(8)
    tmp = work / "tmp"
    tmp.mkdir()
    with VersityGW(work / "gw", binary=ensure_versitygw(install=False)) as gw:
        gw.create_bucket("attack")
        client = S3Client(gw.s3_config())
        url = "s3://attack/obj.bin"
        client.put_bytes(url, os.urandom(3 << 20))
        mf.prepare(url, 64 << 10, client=client)
        with PacingProxy(gw.endpoint_url, profile=[(1.0, 3e4)], seed=3) as proxy:
            env = {**_env(tree, REPLAY_TAG=tag, TMPDIR=str(tmp)), **gw.environ()}
            env["AWS_ENDPOINT_URL_S3"] = proxy.endpoint_url
            argv = [sys.executable, "-m", "parcomm", "bcast", url, "--local", "3", "--out", str(work / "o.{rank}"),
                    "--timeout", "120s"]
            started, left = _kill9(argv, env, lambda: _downloading(tmp) >= 3, tag, work)
        stayed = _entries(tmp, "parcomm-bcast-")
        subprocess.run([sys.executable, "-m", "parcomm", "bcast", url, "--local", "2", "--out", str(work / "next.{rank}")],
                       env={**_env(tree, TMPDIR=str(tmp)), **gw.environ()}, cwd=work, capture_output=True,
                       timeout=120)
    after = [n for n in stayed if (tmp / n).exists()]
    return {"attack": "kill -9 of `bcast --local 3` (downloading)", "processes": started, "left_after_5s": left,
            "status_dirs_left": len(stayed), "after_next_run": len(after)}


def kill9_mine_gen(tree: Path, work: Path) -> dict:
    """Another user planted a link at the old partial name first; then the writer is killed."""
    d = work / "mine"
    d.mkdir()
    d.chmod(0o1777)
    victim = work / "root-owned"
    victim.write_text("precious\n")
    (d / "data.qtx.part").symlink_to(victim)
    os.chown(d / "data.qtx.part", NOBODY, NOBODY, follow_symlinks=False)

    def partials() -> list[str]:
        return [n for n in os.listdir(d) if n.endswith(".part") and not (d / n).is_symlink()]

    proc = subprocess.Popen([sys.executable, "-m", "parcomm", "mine", "gen", str(d / "data.qtx"), "-D", "20M"],
                            env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 60
    while not partials() and victim.read_text(errors="replace") == "precious\n" and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.kill()
    proc.wait()
    overwritten = victim.read_text(errors="replace") != "precious\n"
    left = partials()
    subprocess.run([sys.executable, "-m", "parcomm", "mine", "gen", str(d / "data.qtx"), "-D", "100"],
                   env=_env(tree), capture_output=True, timeout=120)
    return {"attack": "link at OUT.part, then kill -9 of `mine gen`", "victim_overwritten": overwritten,
            "partials_left": len(left), "after_next_run": len(partials())}


# ------------------------------------------------------------------ input reproducers


def _cli(tree: Path, argv: list[str], cwd: Path) -> str:
    try:
        run = subprocess.run([sys.executable, "-m", "parcomm", *argv], env=_env(tree), cwd=cwd,
                             capture_output=True, text=True, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        return "hang"
    if "Traceback" in run.stderr:
        return "traceback"
    return "clean" if run.returncode in (0, 2) else f"exit {run.returncode}"


def inputs(tree: Path, work: Path) -> dict:
    files = {
        "huge.json": '{"rate_hold_s": ' + "9" * 5000 + "}",
        "bytes.json": b'{"name": "\xff\xfe"}',
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "nan.json": '{"message_latency_s": NaN}',
    }
    outcomes = {}
    for name, content in files.items():
        (work / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        argv = ["bcast", "sim", "--procs", "2", "--size", "1MB", "--storage-profile", name]
        outcomes[f"profile {name}"] = _cli(tree, argv, work)
    (work / "m.toml").write_text('[[scenario]]\nname = "a"\nworkload = "incast"\nhosts = ' + "9" * 5000 + "\n")
    outcomes["matrix --list"] = _cli(tree, ["conformance", "m.toml", "--list"], work)
    outcomes["mine gen -T 1e12"] = _cli(tree, ["mine", "gen", "o.qtx", "-D", "100", "-T", "1e12"], work)
    outcomes["--kwargs 5000 digits"] = _cli(
        tree, ["sim", "run", "barrier", "--platform", "star:2", "--kwargs", '{"n": ' + "9" * 5000 + "}"], work
    )
    bad = {k: v for k, v in outcomes.items() if v != "clean"}
    return {"attack": "input reproducers", "cases": len(outcomes), "not_clean": bad}


def run_all(tree: Path, work: Path, with_bcast: bool) -> list[dict]:
    if os.geteuid() != 0:
        return [{"attack": "local attacks", "skipped": "they play another user with chown: run as root"}]
    cases = [rendezvous_fifo, rendezvous_symlink, key_fifo, key_foreign, kill9_run_local, kill9_mine_gen, inputs]
    if with_bcast:
        cases.insert(6, kill9_bcast_local)
    results = []
    for case in cases:
        sub = work / case.__name__
        sub.mkdir()
        results.append(case(tree, sub))
        print(json.dumps(results[-1]), flush=True)
    return results
