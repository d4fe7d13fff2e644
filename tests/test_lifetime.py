"""lifetime.py: what the sweeps remove (only dead owners' directories and partial files of this
user, never through a link) and what a child's watch does."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from parcomm import lifetime


def _dead_owner() -> lifetime.Owner:
    """A process that existed and is gone."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    owner = lifetime.Owner(p.pid, lifetime.proc_start_time(p.pid) or 1)
    p.wait()
    return owner


def test_owner_check_tells_a_recycled_pid_apart():
    me = lifetime.this_process()
    assert lifetime.alive(me)
    assert not lifetime.alive(lifetime.Owner(me.pid, (me.start or 0) + 1))  # same pid, other process
    assert not lifetime.alive(_dead_owner())


def test_a_killed_process_not_yet_reaped_is_dead():
    """A launcher killed by -9 is a zombie until its parent reaps it: its children must not wait for that."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = lifetime.Owner(p.pid, lifetime.proc_start_time(p.pid))
        assert lifetime.alive(owner)
        p.kill()
        deadline = time.monotonic() + 20
        while lifetime.alive(owner) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not lifetime.alive(owner)
        assert Path(f"/proc/{p.pid}").exists()  # not reaped yet: a zombie
    finally:
        p.kill()
        p.wait()


def test_sweep_removes_only_dead_owners_directories_of_ours(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = _dead_owner()
    gone = tmp_path / f"parcomm-bcast-{dead.pid}-{dead.start}-abc123"
    gone.mkdir()
    (gone / "progress-0.json").write_text("{}")
    live = Path(lifetime.owned_temp_dir("bcast"))
    other_kind = tmp_path / f"parcomm-emu-{dead.pid}-{dead.start}-abc123"  # the emulation sweeps its own
    other_kind.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / f"parcomm-bcast-{dead.pid}-{dead.start}-link00"
    link.symlink_to(target)
    mp_dead = tmp_path / "pymp-dead0000"
    mp_dead.mkdir()
    (mp_dead / f".parcomm-owner-{dead.pid}-{dead.start}").touch()
    mp_unmarked = tmp_path / "pymp-unmarked"  # someone else's multiprocessing: never ours to judge
    mp_unmarked.mkdir()
    removed = lifetime.sweep_temp_dirs()
    assert sorted(removed) == sorted([str(gone), str(mp_dead)])
    assert live.is_dir() and other_kind.is_dir() and link.is_symlink() and target.is_dir() and mp_unmarked.is_dir()
    if os.geteuid() == 0:  # another user's directory of a dead pid stays
        foreign = tmp_path / f"parcomm-bcast-{dead.pid}-{dead.start}-nobody"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        assert lifetime.sweep_temp_dirs() == [] and foreign.is_dir()


def test_partial_file_is_renamed_when_whole_and_removed_on_failure(tmp_path):
    out = tmp_path / "o.bin"
    with lifetime.partial_file(out) as f:
        f.write(b"whole")
    assert out.read_bytes() == b"whole" and os.listdir(tmp_path) == ["o.bin"]
    with pytest.raises(RuntimeError), lifetime.partial_file(out) as f:
        f.write(b"half")
        raise RuntimeError("disk on fire")
    assert out.read_bytes() == b"whole" and os.listdir(tmp_path) == ["o.bin"]


def test_partials_of_dead_writers_are_swept_and_live_ones_kept(tmp_path):
    dead, me = _dead_owner(), lifetime.this_process()
    stale = tmp_path / f".o.bin.parcomm-{dead.pid}-{dead.start}-{'0' * 16}.part"
    mine = tmp_path / f".o.bin.parcomm-{me.pid}-{me.start}-{'1' * 16}.part"
    other_target = tmp_path / f".p.bin.parcomm-{dead.pid}-{dead.start}-{'2' * 16}.part"
    for p in (stale, mine, other_target):
        p.write_bytes(b"x")
    assert lifetime.sweep_partial_files(tmp_path / "o.bin") == [str(stale)]
    assert mine.exists() and other_target.exists()


def test_a_child_watching_its_pipe_dies_when_the_other_end_closes():
    """What a `run local` rank does: the launcher's end closes (it died), the rank is killed."""
    import socket

    ours, theirs = socket.socketpair()
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys, time; from parcomm import lifetime; fd = int(sys.argv[1]); "
            "lifetime.die_when_closed(fd); socket.socket(fileno=fd).recv(64); time.sleep(60)",
            str(theirs.fileno()),
        ],
        pass_fds=[theirs.fileno()],
    )
    theirs.close()
    try:
        ours.sendall(b"a message is not an end")
        time.sleep(1.0)
        assert child.poll() is None
        ours.close()
        assert child.wait(timeout=20) == -9
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
