"""Nothing left behind, and local storage failures said plainly (issue 14, items 7 and 8).

* A bcast writer killed with ``kill -9`` leaves a hidden partial file; the
  next writer of that output removes it — but never a live writer's.
* A full disk is reported as a full disk, at once, as an error the bcast
  retry loop does not retry (not an ``OSError``).
* An emulation killed with ``kill -9`` (with or without its reaper) leaves
  no work directory and no namespace behind once the next run starts.
* Path and permission mistakes give one line and exit 2.

Every "killed" process here is a real child process, killed by its pid.
Tests that mount a small tmpfs or build namespaces need root and skip
with the reason otherwise.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from parcomm.apps.bcast.output import (
    OutputError,
    OutputWriter,
    check_output_path,
    partial_path,
    remove_stale_partials,
)

# --------------------------------------------------------------------------- helpers


def _partials(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".parcomm-partial-" in p.name)


_WRITER = textwrap.dedent(
    """
    import sys, time
    from parcomm.apps.bcast.output import OutputWriter
    w = OutputWriter(sys.argv[1], 4 << 20, None)
    w.write_piece(0, b"x" * (1 << 20))
    print(w.temp_path, flush=True)
    time.sleep(600)
    """
)


def _start_writer(target: Path) -> tuple[subprocess.Popen, Path]:
    """A real process holding an OutputWriter on ``target``; returns it and its partial file."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline().strip()
    assert line, proc.stderr.read()
    return proc, Path(line)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)  # our own child, by pid
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()


def _mount_tmpfs(path: Path, options: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")


def _umount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_fs(tmp_path):
    """A real 1 MiB filesystem (tmpfs), unmounted afterwards."""
    mnt = tmp_path / "small"
    _mount_tmpfs(mnt, "size=1m,mode=0755")
    yield mnt
    _umount(mnt)


@pytest.fixture
def readonly_fs(tmp_path):
    mnt = tmp_path / "ro"
    _mount_tmpfs(mnt, "ro,size=64k")
    yield mnt
    _umount(mnt)


def _no_fallocate(monkeypatch):
    """This filesystem 'does not support fallocate' (as NFSv3, some FUSE and older filesystems)."""

    def refuse(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(os, "posix_fallocate", refuse)


# --------------------------------------------------------------------------- stale partial files


def test_partial_of_a_killed_writer_is_removed_by_the_next_but_a_live_ones_is_kept(tmp_path):
    target = tmp_path / "obj.bin"
    dead, dead_partial = _start_writer(target)
    live, live_partial = _start_writer(target)
    try:
        _kill(dead)
        assert dead_partial.exists() and dead_partial.stat().st_size == 4 << 20  # what kill -9 leaves
        data = b"parcomm" * 1000
        with OutputWriter(target, len(data), hashlib.sha256(data).digest()) as out:
            assert not dead_partial.exists()  # swept when the next writer started
            assert live_partial.exists()  # a live writer's is never touched
            out.write_piece(0, data)
            out.commit()
        assert target.read_bytes() == data
        assert _partials(tmp_path) == [live_partial.name]
        assert remove_stale_partials(target) == []  # still alive: still kept
    finally:
        _kill(live)
    # Its owner is dead now: the next sweep removes it too.
    assert remove_stale_partials(target) == [live_partial]
    assert _partials(tmp_path) == []


def test_recycled_pid_and_foreign_partials(tmp_path):
    """The owner is the pid *and* its start time; a locked or foreign partial stays."""
    target = tmp_path / "obj.bin"
    mine = partial_path(target)
    assert mine.name.count("-") >= 3 and f"-{os.getpid()}-" in mine.name
    # A dead writer whose pid now belongs to another process (here: this one, with another start time).
    host, pid, start = mine.name.rsplit("-", 2)
    recycled = mine.with_name(f"{host}-{pid}-{int(start) + 1}")
    recycled.write_bytes(b"r")
    # This process, right name, not (yet) locked: a writer between create and lock. Kept.
    mine.write_bytes(b"m")
    # A dead pid, but someone holds the lock (e.g. a writer in another pid namespace). Kept.
    locked = partial_path(target, pid=2**22 + 7)
    locked.write_bytes(b"l")
    fd = os.open(locked, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    # Another host's partial on a shared filesystem: cannot tell if its owner lives. Kept.
    foreign = target.with_name(f".obj.bin.parcomm-partial-otherhost-{2**22 + 9}-12345")
    foreign.write_bytes(b"f")
    # The older name form (pid only) of a dead process. Removed.
    legacy = target.with_name(f".obj.bin.parcomm-partial-{2**22 + 11}")
    legacy.write_bytes(b"o")
    # Not ours at all. Kept.
    other = tmp_path / ".obj.bin.parcomm-partial-not-a-token"
    other.write_bytes(b"n")
    try:
        assert sorted(remove_stale_partials(target)) == sorted([recycled, legacy])
    finally:
        os.close(fd)
    assert {p.name for p in tmp_path.iterdir()} == {mine.name, locked.name, foreign.name, other.name}
    assert remove_stale_partials(target) == [locked]  # its lock is gone now


# --------------------------------------------------------------------------- disk full


def test_disk_full_is_refused_up_front(small_fs):
    target = small_fs / "big.bin"
    with pytest.raises(OutputError, match=r"disk full \(ENOSPC\)") as err:
        OutputWriter(target, 8 << 20, None)  # 8 MiB onto 1 MiB: fallocate says no at once
    assert str(target) in str(err.value)
    assert not isinstance(err.value, OSError)  # the bcast retry loop retries OSErrors only
    assert os.listdir(small_fs) == []


def test_disk_full_without_fallocate_checks_free_space(small_fs, monkeypatch):
    _no_fallocate(monkeypatch)
    target = small_fs / "big.bin"
    with pytest.raises(OutputError, match=r"disk full \(ENOSPC\).*needs 8388608 bytes") as err:
        OutputWriter(target, 8 << 20, None)
    assert str(target) in str(err.value)
    assert os.listdir(small_fs) == []
    with pytest.raises(OutputError, match="disk full"):
        check_output_path(target, 8 << 20)
    assert check_output_path(target, 100_000) == target


def test_disk_filling_up_midway_is_one_clear_error(small_fs, monkeypatch):
    """No fallocate and the space taken by someone else after the check: the write itself hits ENOSPC."""
    _no_fallocate(monkeypatch)
    target = small_fs / "obj.bin"
    out = OutputWriter(target, 600_000, None)  # fits now (sparse, nothing reserved)
    with open(small_fs / "filler", "wb") as f:  # another program takes the space
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with pytest.raises(OutputError) as err:
        out.write_piece(0, os.urandom(600_000))
    msg = str(err.value)
    assert "disk full (ENOSPC)" in msg and str(target) in msg and "600000" in msg
    assert not isinstance(err.value, OSError)
    out.abort()
    assert os.listdir(small_fs) == ["filler"]


# --------------------------------------------------------------------------- the same through `parcomm bcast`


@pytest.fixture(scope="module")
def bcast_object(versitygw, s3_bucket):
    """An 8 MiB object with its hash list: (url, sha256 hex)."""
    import numpy as np
    from parcomm.apps.bcast import manifest as mf
    from parcomm.apps.bcast.s3 import S3Client

    client = S3Client(versitygw.s3_config())
    url = f"s3://{s3_bucket}/leftovers/obj.bin"
    data = np.random.default_rng(14).bytes(8 << 20)
    client.put_bytes(url, data)
    mf.prepare(url, 256 << 10, client=client)
    return url, hashlib.sha256(data).hexdigest()


def _bcast_node(url: str, out: Path, meet: Path, prelude: str = "") -> list[str]:
    """argv of one hand-started node (`--nodes 1`), optionally after some Python run first."""
    args = [
        "bcast",
        url,
        "--out",
        str(out),
        "--rendezvous-dir",
        str(meet),
        "--rank",
        "0",
        "--nodes",
        "1",
        "--timeout",
        "120s",
    ]
    if not prelude:
        return [sys.executable, "-m", "parcomm", *args]
    return [
        sys.executable,
        "-c",
        prelude + "\nimport sys\nfrom parcomm.cli import main\nsys.exit(main(sys.argv[1:]))",
        *args,
    ]


def _node_env(versitygw, endpoint: str) -> dict:
    from parcomm.auth import JobKey

    return {
        **os.environ,
        **versitygw.environ(),
        "AWS_ENDPOINT_URL_S3": endpoint,
        "PARCOMM_JOB_KEY": JobKey.generate().hex(),
    }


def test_killed_bcast_node_leaves_nothing_after_the_next_run(versitygw, bcast_object, tmp_path):
    from parcomm.apps.bcast.proxy import PacingProxy

    url, digest = bcast_object
    out = tmp_path / "out"
    out.mkdir()
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 2e5)], seed=1) as proxy:  # 200 kB/s: seconds to go
        node = subprocess.Popen(
            _bcast_node(url, out / "obj.bin", tmp_path / "meet1"),
            env=_node_env(versitygw, proxy.endpoint_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not _partials(out) and time.monotonic() < deadline:
                assert node.poll() is None, node.communicate()
                time.sleep(0.05)
            time.sleep(0.3)
            assert node.poll() is None, "the node finished before it could be killed"
        finally:
            _kill(node)
    left = _partials(out)
    assert len(left) == 1 and (out / left[0]).stat().st_size == 8 << 20  # the hidden partial kill -9 leaves
    run = subprocess.run(
        _bcast_node(url, out / "obj.bin", tmp_path / "meet2"),
        env=_node_env(versitygw, versitygw.endpoint_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert os.listdir(out) == ["obj.bin"]
    assert hashlib.sha256((out / "obj.bin").read_bytes()).hexdigest() == digest


def test_bcast_onto_a_full_disk_fails_at_once_without_refetching(versitygw, bcast_object, small_fs, tmp_path):
    """No fallocate and no free-space figure (the worst case): the first write hits ENOSPC and
    ends the run with that, instead of five re-downloads of each work."""
    from parcomm.apps.bcast.proxy import PacingProxy

    url, _digest = bcast_object
    blind = (
        "import os\n"
        "del os.posix_fallocate\n"
        "def _unknown(*a):\n    raise OSError(38, 'statvfs not supported')\n"
        "os.statvfs = os.fstatvfs = _unknown"
    )
    with PacingProxy(versitygw.endpoint_url) as proxy:
        run = subprocess.run(
            _bcast_node(url, small_fs / "obj.bin", tmp_path / "meet", prelude=blind),
            env=_node_env(versitygw, proxy.endpoint_url),
            capture_output=True,
            text=True,
            timeout=120,
        )
        stats = proxy.snapshot()
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    assert "disk full (ENOSPC)" in lines[0] and str(small_fs / "obj.bin") in lines[0], lines[0]
    assert "failed 5 times" not in run.stderr
    assert stats.bytes_served < 8 << 20, stats  # before: 11 GETs, 13 MB for this 8 MiB object
    assert os.listdir(small_fs) == []

    # With the usual tools (fallocate) the run does not even start downloading the object.
    with PacingProxy(versitygw.endpoint_url) as proxy:
        run = subprocess.run(
            _bcast_node(url, small_fs / "obj.bin", tmp_path / "meet2"),
            env=_node_env(versitygw, proxy.endpoint_url),
            capture_output=True,
            text=True,
            timeout=120,
        )
        stats = proxy.snapshot()
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "disk full (ENOSPC)" in run.stderr, run.stderr
    assert stats.bytes_served < 1 << 20, stats  # the hash list only
    assert os.listdir(small_fs) == []


# --------------------------------------------------------------------------- output paths


def test_output_path_mistakes_are_one_line(tmp_path, readonly_fs):
    afile = tmp_path / "afile"
    afile.write_bytes(b"x")
    cases = {
        tmp_path / "missing" / "out.bin": "does not exist",
        afile / "out.bin": "is not a directory",
        tmp_path: "is a directory",
        readonly_fs / "out.bin": "not writable",
    }
    for path, words in cases.items():
        for attempt in (lambda: check_output_path(path), lambda: OutputWriter(path, 10, None)):
            with pytest.raises(OutputError) as err:
                attempt()
            msg = str(err.value)
            assert words in msg and str(path) in msg and "\n" not in msg, msg
    with pytest.raises(OutputError, match="not a regular file"):
        check_output_path("/dev/null")  # the rename would replace the device node


# --------------------------------------------------------------------------- emulation leftovers

from test_emu import _namespaces, needs_netns  # noqa: E402  (the emulation tests' root/netns skip)

_EMU_CHILD = textwrap.dedent(
    """
    import time
    from parcomm.emu import EmuCluster
    cl = EmuCluster("star:4,rate=100M,buffer=16KiB", sample_interval_s=None)
    cl.up()
    cl.write_addresses(4, 17000)  # something in the work directory
    print(cl._reaper.pid, cl.workdir, " ".join(cl.namespaces), flush=True)
    time.sleep(600)
    """
)


def _start_emu_child() -> tuple[subprocess.Popen, int, Path, list[str]]:
    """A real process with an emulated cluster up: (process, its reaper's pid, work dir, namespaces)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _EMU_CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = child.stdout.readline().split()
    assert line, child.stderr.read()
    reaper, workdir, *names = line
    assert Path(workdir).is_dir() and os.listdir(workdir) and len(names) == 5
    return child, int(reaper), Path(workdir), names


def _gone(workdir: Path, names: list[str], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not workdir.exists() and not set(names) & _namespaces():
            return True
        time.sleep(0.1)
    return False


@needs_netns
def test_killed_emulation_and_reaper_leave_nothing_after_the_next_start():
    from parcomm.emu import EmuCluster

    doomed, doomed_reaper, doomed_dir, doomed_ns = _start_emu_child()
    live, _live_reaper, live_dir, live_ns = _start_emu_child()
    try:
        os.kill(doomed_reaper, signal.SIGKILL)  # the reaper we started through the child, by its pid
        _kill(doomed)
        time.sleep(1.0)
        # What kill -9 of both leaves: the work directory and every namespace.
        assert doomed_dir.is_dir() and set(doomed_ns) <= _namespaces()
        with EmuCluster("star:2,rate=100M", sample_interval_s=None) as cl:
            assert set(doomed_ns) <= set(cl.stale_removed)
            assert not doomed_dir.exists() and not set(doomed_ns) & _namespaces()
            # Never a live run's.
            assert live_dir.is_dir() and os.listdir(live_dir) and set(live_ns) <= _namespaces()
            mine = Path(cl.workdir)
            assert mine.name.startswith("parcomm-emu-") and mine.is_dir()
        assert not mine.exists()
    finally:
        _kill(live)
    # The live run's owner is dead now and its reaper is still there: it removes everything.
    assert _gone(live_dir, live_ns, 10), "the reaper left the work directory or namespaces"


@needs_netns
def test_sweep_removes_only_dead_unkept_work_directories(tmp_path):
    """Work directories without a state file (killed between the two) go by their pid;
    a live pid's, a kept one and a symlink named like one stay."""
    from parcomm.emu import EmuCluster
    from parcomm.emu.naming import KEEP_MARK, sweep

    top = Path(tempfile.gettempdir())
    dead = top / f"parcomm-emu-{2**22 + 3}-beef-abc123"
    live = top / f"parcomm-emu-{os.getpid()}-beef-abc123"
    kept = top / f"parcomm-emu-{2**22 + 5}-beef-abc123"
    target = tmp_path / "precious"
    target.mkdir()
    (target / "data").write_text("keep me")
    link = top / f"parcomm-emu-{2**22 + 7}-beef-abc123"
    try:
        for d in (dead, live, kept):
            (d / "sub").mkdir(parents=True)
            (d / "sub" / "f").write_text("x")
        (kept / KEEP_MARK).touch()
        link.symlink_to(target)
        removed = sweep()
        assert str(dead) in removed.workdirs and not dead.exists()
        assert live.is_dir() and kept.is_dir() and link.is_symlink() and (target / "data").read_text() == "keep me"
        # A kept work directory survives its own run's teardown too.
        with EmuCluster("star:2,rate=100M", sample_interval_s=None, keep_workdir=True) as cl:
            kept_run = Path(cl.workdir)
        assert kept_run.is_dir() and (kept_run / KEEP_MARK).exists()
        assert str(kept_run) not in sweep().workdirs and kept_run.is_dir()
    finally:
        import shutil

        for d in (dead, live, kept, locals().get("kept_run")):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)
        if link.is_symlink():
            link.unlink()


@needs_netns
def test_cli_emu_cleanup_reports_work_directories(tmp_path):
    stale = Path(tempfile.gettempdir()) / f"parcomm-emu-{2**22 + 13}-cafe-xyz789"
    stale.mkdir()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "parcomm", "emu", "cleanup", "--json"], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert str(stale) in json.loads(proc.stdout)["workdirs"] and not stale.exists()
        proc = subprocess.run(
            [sys.executable, "-m", "parcomm", "emu", "cleanup"], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0 and "work director" in proc.stdout, proc.stdout + proc.stderr
    finally:
        if stale.exists():
            stale.rmdir()


# --------------------------------------------------------------------------- one line for path mistakes


def _parcomm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parcomm", *args], capture_output=True, text=True, timeout=timeout)


def _one_line(proc: subprocess.CompletedProcess, code: int, *words: str) -> str:
    err = proc.stderr.strip()
    assert proc.returncode == code and "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert all(w in err for w in words), err
    return err


def test_repro_bad_out_is_one_line_exit_2(tmp_path, readonly_fs):
    afile = tmp_path / "afile"
    afile.write_text("x")
    # Before: 28-46 lines of traceback each (FileNotFoundError / NotADirectoryError from mkdir).
    _one_line(
        _parcomm("repro", "--quick", "--out", str(afile / "res"), "shimokuni"), 2, str(afile / "res"), "not a directory"
    )
    _one_line(_parcomm("repro", "--quick", "--out", "/proc/parcomm-no/res", "shimokuni"), 2, "/proc/parcomm-no/res")
    _one_line(_parcomm("repro", "--quick", "--out", "/proc", "shimokuni"), 2, "--out /proc", "cannot write")
    _one_line(_parcomm("repro", "--quick", "--out", str(readonly_fs / "res"), "shimokuni"), 2, "read-only file system")
    _one_line(_parcomm("repro", "--quick", "--out", str(readonly_fs), "shimokuni"), 2, "read-only file system")
    # A typo in a study name is refused before --out is created.
    _one_line(_parcomm("repro", "--out", str(tmp_path / "new"), "nosuch"), 2, "nosuch")
    assert not (tmp_path / "new").exists()


def test_repro_running_out_of_space_is_one_line_exit_1(tmp_path):
    """The call was fine; the run failed (64 KiB filesystem, half a MiB of results): exit 1, one line."""
    mnt = tmp_path / "tiny"
    _mount_tmpfs(mnt, "size=64k")
    try:
        proc = _parcomm("repro", "--quick", "--out", str(mnt / "res"), "shimokuni", timeout=300)
    finally:
        _umount(mnt)
    _one_line(proc, 1, str(mnt / "res"), "no space left on device (ENOSPC)")


def test_emu_path_mistakes_are_one_line(tmp_path):
    _one_line(_parcomm("emu", "run", "incast", "--platform", str(tmp_path / "missing.toml")), 2, "missing.toml")
    unreadable = tmp_path / "plat.toml"
    unreadable.write_bytes(b"\xff\xfe not toml [[[")
    _one_line(_parcomm("emu", "run", "incast", "--platform", str(unreadable)), 2, "plat.toml")


@needs_netns
def test_emu_cluster_without_a_work_directory_is_a_clear_error_and_leaves_nothing(monkeypatch):
    from parcomm.emu import EmuCluster, EmuError, list_runs

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "mkdtemp", full)
    ours = lambda: {r.run_id for r in list_runs() if r.pid == os.getpid()}  # noqa: E731 (other sessions may run)
    before = ours()
    cl = EmuCluster("star:2,rate=100M", sample_interval_s=None)
    with pytest.raises(EmuError, match="cannot create a work directory.*No space left on device"):
        cl.up()
    assert not cl.is_up and cl.workdir is None
    assert ours() == before  # no state file, no namespace of it left
