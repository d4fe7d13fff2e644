"""The job handshake, the frame tags and the listeners' bounds, sans-IO: driven
byte for byte in memory (no sockets, no clock), as quinn-proto's tests drive it."""

from __future__ import annotations

import pytest
from parcomm.auth import AuthError, FrameAuthError, Gate, Handshake, JobKey, PeerRefused, Refusal
from parcomm.auth.handshake import GREETING_SIZE
from parcomm.auth.quiet import QuietPool

KEY = JobKey.generate()
CTX = b"test-protocol-1"


def _accept_rank(me: bytes):
    def accept(hello: bytes, expect: bytes) -> bytes:
        if expect != me:
            raise Refusal(f"this is {me.decode()}, not {expect.decode()}")
        return me

    return accept


def _run(initiator: Handshake, responder: Handshake, tamper=None) -> tuple[list[bytes], list[bytes]]:
    """Carry bytes between the two ends until both are done (or one raises). Returns what
    each end sent. ``tamper(direction, data)`` may change a message in flight."""
    sent_i, sent_r = [initiator.start()], [responder.start()]
    to_r, to_i = bytearray(sent_i[0]), bytearray(sent_r[0])
    for _ in range(20):
        progressed = False
        for hs, inbox, outbox, sent, direction in (
            (responder, to_r, to_i, sent_r, "i->r"),
            (initiator, to_i, to_r, sent_i, "r->i"),
        ):
            if not hs.done and len(inbox) >= hs.need:
                data = bytes(inbox[: hs.need])
                del inbox[: hs.need]
                if tamper is not None:
                    data = tamper(direction, data)
                out = hs.receive(data)
                if out:
                    sent.append(out)
                    outbox += out
                progressed = True
        if initiator.done and responder.done or not progressed:
            break
    return sent_i, sent_r


def _pair(key_i=KEY, key_r=KEY, expect=b"rank 1", me=b"rank 1", ctx_r=CTX):
    i = Handshake(key_i, initiator=True, context=CTX, hello=b"rank 0 of job J", expect=expect)
    r = Handshake(key_r, initiator=False, context=ctx_r, accept=_accept_rank(me))
    return i, r


def test_members_complete_it_and_their_frame_keys_match():
    i, r = _pair()
    _run(i, r)
    assert i.done and r.done
    assert r.peer_hello == b"rank 0 of job J" and r.peer_expect == b"rank 1" and i.peer_hello == b"rank 1"
    fi, fr = i.frames(), r.frames()
    for n in range(3):  # both directions, in order
        fr.check(fi.seal(b"head", b"payload %d" % n), b"head", b"payload %d" % n)
        fi.check(fr.seal(b"back"), b"back")


def test_without_the_key_the_responder_proves_nothing():
    i, r = _pair(key_i=JobKey.generate())
    with pytest.raises(AuthError, match="failed to prove"):
        _run(i, r)
    assert not r.done and r.progress == 1  # it read a greeting and a claim, answered neither


def test_the_responder_sends_only_its_greeting_before_the_initiator_proved():
    i, r = _pair()
    sent_i, sent_r = _run(i, r)
    assert len(sent_r[0]) == GREETING_SIZE and len(sent_r) == 2  # greeting, then (only then) the answer


def test_a_claim_for_another_rank_is_refused_with_an_authenticated_reason():
    i, r = _pair(expect=b"rank 2")
    with pytest.raises(PeerRefused, match="this is rank 1, not rank 2"):
        _run(i, r)
    assert r.refused == "this is rank 1, not rank 2"


@pytest.mark.parametrize("where", ["i->r", "r->i"])
def test_any_changed_byte_after_the_greetings_fails_it(where):
    def flip(direction, data):
        if direction == where and len(data) > 8 and data[:8] != b"PCAUTH02":
            return data[:-1] + bytes([data[-1] ^ 1])  # the proof's last byte
        return data

    i, r = _pair()
    with pytest.raises(AuthError):
        _run(i, r, tamper=flip)


def test_a_proof_for_another_protocol_is_worthless():
    i, r = _pair(ctx_r=b"another-protocol")
    with pytest.raises(AuthError, match="failed to prove"):
        _run(i, r)


def test_a_reflected_greeting_is_refused():
    r = Handshake(KEY, initiator=False, context=CTX, accept=_accept_rank(b"x"))
    with pytest.raises(AuthError, match="echoed"):
        r.receive(r.start())


def test_oversized_claims_are_refused_before_they_are_read():
    i, r = _pair()
    r.start()
    r.receive(i.start())
    with pytest.raises(AuthError, match="oversized"):
        r.receive(b"\xff\xff\x00\x00")


def _keys():
    i, r = _pair()
    _run(i, r)
    return i.frames(), r.frames()


def test_frames_replayed_reordered_or_changed_fail():
    a, b = _keys()
    t1, t2 = a.seal(b"one"), a.seal(b"two")
    with pytest.raises(FrameAuthError):
        b.check(t2, b"two")  # out of order
    a, b = _keys()
    t1 = a.seal(b"one")
    b.check(t1, b"one")
    with pytest.raises(FrameAuthError):
        b.check(t1, b"one")  # replayed
    a, b = _keys()
    with pytest.raises(FrameAuthError):
        b.check(a.seal(b"one"), b"onE")  # changed
    a, b = _keys()
    big = bytes(200 * 1024)  # above the join limit: the parts go to GCM one by one
    b.check(a.seal(b"h", big), b"h", big)
    with pytest.raises(FrameAuthError):
        b.check(a.seal(b"h", big), b"h", big[:-1] + b"\x01")


def test_the_gate_sheds_silent_before_greeted_and_never_refuses_a_newcomer():
    gate = Gate("test", limit=4, per_source=3)
    shed: list[str] = []
    progress = {"member": 1}

    def enter(name: str, source: str) -> int:
        return gate.enter(source, lambda: shed.append(name), lambda: progress.get(name, 0))

    enter("member", "10.0.0.1")  # greeted at once
    enter("silent-1", "10.0.0.1")
    enter("silent-2", "10.0.0.1")
    enter("silent-3", "10.0.0.1")  # source at its bound: its oldest silent one goes, not the member
    assert shed == ["silent-1"]
    enter("other", "10.0.0.2")  # room: nobody shed
    assert shed == ["silent-1"]
    enter("other-2", "10.0.0.2")  # total at its bound: shed from the busiest source, still not the member
    assert shed == ["silent-1", "silent-2"] and gate.pending == 4 and gate.shed == 2


def test_the_quiet_pool_drops_the_oldest_per_source_and_the_long_silent():
    pool = QuietPool(limit=4, per_source=2, max_silence=1.0)
    assert pool.add("a1", "A", 0.0) == [] and pool.add("a2", "A", 0.1) == []
    assert pool.add("a3", "A", 0.2) == ["a1"]  # A at its bound: its oldest
    assert pool.add("b1", "B", 0.3) == [] and pool.add("c1", "C", 0.4) == []
    assert pool.add("d1", "D", 0.5) == ["a2"]  # total at its bound: the oldest
    assert pool.remove("b1") and not pool.remove("b1")
    assert pool.expired(1.45) == ["a3", "c1"] and len(pool) == 1
