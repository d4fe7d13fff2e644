"""The sans-IO point-to-point engine (parcomm.comm.p2p) that both the
simulator and SocketComm drive: eager rule, sender- and receiver-driven
rendezvous, matching order, protocol errors; driven here by a tiny loop."""

from __future__ import annotations

import pytest
from parcomm.comm.p2p import CREDIT, CTS, DATA, EAGER, RTS, Deliver, Frame, P2PEngine, ProtocolError


class Net:
    """Two or more engines; frames are delivered in FIFO order when pumped."""

    def __init__(self, n, eager_limit=100, rendezvous="sender"):
        self.engines = [P2PEngine(r, eager_limit, rendezvous) for r in range(n)]
        self.wire: list[tuple[int, Frame]] = []
        self.kinds: list[int] = []
        self.sent: list = []
        self.delivered: dict = {}

    def collect(self, rank):
        for a in self.engines[rank].take_actions():
            if isinstance(a, Frame):
                self.wire.append((rank, a))
                self.kinds.append(a.kind)
                if a.sent is not None:
                    self.sent.append(a.sent)
            else:
                assert isinstance(a, Deliver)
                self.delivered[a.req] = (a.source, a.tag, a.size, a.payload)

    def pump(self):
        while self.wire:
            src, f = self.wire.pop(0)
            self.engines[f.dest].on_frame(src, f.kind, f.tag, f.size, f.msgid, f.payload)
            self.collect(f.dest)


def test_eager_below_the_limit_and_unexpected_until_posted():
    net = Net(2)
    net.engines[0].send(1, 5, "small", 10, 10, "s1")
    net.collect(0)
    net.pump()
    assert net.kinds == [EAGER] and net.sent == ["s1"] and not net.delivered
    net.engines[1].post_recv(0, 5, "r1")
    net.collect(1)
    assert net.delivered == {"r1": (0, 5, 10, "small")}


def test_sender_driven_rendezvous_waits_for_the_receive():
    net = Net(2)
    net.engines[0].send(1, 5, "big", 1000, 1000, "s1")
    net.collect(0)
    net.pump()
    assert net.kinds == [RTS] and net.sent == []  # nothing left: the data waits
    net.engines[1].post_recv(0, 5, "r1")
    net.collect(1)
    net.pump()
    assert net.kinds == [RTS, CTS, DATA] and net.sent == ["s1"]
    assert net.delivered == {"r1": (0, 5, 1000, "big")}


def test_receiver_driven_rendezvous_goes_on_a_credit():
    net = Net(2, rendezvous="receiver")
    net.engines[0].send(1, 5, "big", 1000, 1000, "s1")
    net.collect(0)
    assert net.kinds == []  # blocked: no credit yet
    net.engines[1].post_recv(0, 5, "r1")
    net.collect(1)
    net.pump()
    assert net.kinds == [CREDIT, EAGER] and net.delivered == {"r1": (0, 5, 1000, "big")}
    # a credit that arrives first lets the later large send go at once
    net.engines[1].post_recv(0, 6, "r2")
    net.collect(1)
    net.pump()
    net.engines[0].send(1, 6, "big2", 1000, 1000, "s2")
    net.collect(0)
    net.pump()
    assert net.kinds[-2:] == [CREDIT, EAGER] and net.delivered["r2"][3] == "big2"


def test_messages_match_in_order():
    net = Net(2)
    for i in range(3):
        net.engines[0].send(1, 1, i, 1, 1, None)
    net.collect(0)
    net.pump()
    for i in range(3):
        net.engines[1].post_recv(0, 1, f"r{i}")
        net.collect(1)
    assert [net.delivered[f"r{i}"][3] for i in range(3)] == [0, 1, 2]


def test_unknown_message_ids_are_protocol_errors():
    e = P2PEngine(0, 100)
    with pytest.raises(ProtocolError, match="clear-to-send for unknown message 7"):
        e.on_frame(1, CTS, 0, 0, 7)
    with pytest.raises(ProtocolError, match="data for unknown message 3"):
        e.on_frame(1, DATA, 0, 10, 3, b"x")
    with pytest.raises(ValueError, match="rendezvous must be"):
        P2PEngine(0, 100, "both")
