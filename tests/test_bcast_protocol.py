"""parcomm bcast state machines (seed 004): layout, messages, work stealing,
piece exchange, driven event by event without any driver."""

from __future__ import annotations

import pytest
from parcomm.apps.bcast.layout import PAPER_PIECE_SIZE, PAPER_WORK_PIECES, Layout
from parcomm.apps.bcast.messages import (
    MESSAGE_TYPES,
    Bitfield,
    CancelFetch,
    Drop,
    Failed,
    FetchStorage,
    Finished,
    GiveWork,
    GrantWorks,
    Have,
    Notice,
    NoWork,
    PeerJoined,
    PeerLost,
    PeerMessage,
    PeerPiece,
    PhaseDone,
    Readmitted,
    Request,
    S3FetchDone,
    S3FetchFailed,
    S3Piece,
    Send,
    Start,
    Tick,
    Unchoke,
    Watch,
)
from parcomm.apps.bcast.node import BcastConfig, BcastNode
from parcomm.apps.bcast.notices import COMPLETE, DONE, JOINED, LOST

KB = 1024


def sends(actions, kind=None, peer=None):
    return [
        a
        for a in actions
        if isinstance(a, Send) and (kind is None or isinstance(a.msg, kind)) and (peer is None or a.peer == peer)
    ]


def told(actions, kind, peer=None):
    """The notices of ``kind`` among ``actions`` (Sends of :class:`Notice`)."""
    return [a for a in sends(actions, Notice, peer) if a.msg.kind == kind]


def fetches(actions):
    return [a for a in actions if isinstance(a, FetchStorage)]


def complete_fetch(node, now, fetch):
    """Deliver every piece of a fetch, then its end; return all actions."""
    out = []
    for p in range(fetch.first_piece, fetch.last_piece + 1):
        out += node.handle(now, S3Piece(fetch.fetch_id, p))
    return out + node.handle(now, S3FetchDone(fetch.fetch_id))


# ---------------------------------------------------------------- layout


def test_empty_object_has_no_pieces_and_every_algo_finishes_at_start():
    layout = Layout(0, 64 * KB, 4)
    assert (layout.pieces, layout.works) == (0, 0)
    assert list(layout.initial_works(2, 3)) == []
    for algo in ("flat", "nonsteal", "steal"):
        node = BcastNode(0, 3, layout, algo)
        actions = node.handle(0.0, Start())
        assert any(isinstance(a, Finished) for a in actions) and not fetches(actions)
        assert node.finished_at == 0.0 and node.storage_done_at == 0.0


@pytest.mark.parametrize(
    "size,pieces,works,last",
    [
        (1, 1, 1, 1),
        (64 * KB, 1, 1, 64 * KB),
        (64 * KB + 1, 2, 1, 1),
        (4 * 64 * KB, 4, 1, 64 * KB),
        (4 * 64 * KB + 5, 5, 2, 5),
        (10 * 64 * KB - 3, 10, 3, 64 * KB - 3),
    ],
)
def test_layout_sizes_not_multiple_of_piece_or_work(size, pieces, works, last):
    layout = Layout(size, 64 * KB, 4)
    assert (layout.pieces, layout.works) == (pieces, works)
    assert layout.piece_length(pieces - 1) == last
    assert sum(layout.piece_length(p) for p in range(pieces)) == size
    spans = [layout.work_bytes(w) for w in range(works)]
    assert spans[0][0] == 0 and spans[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous, no overlap
    assert [p for w in range(works) for p in layout.work_pieces_of(w)] == list(range(pieces))


def test_layout_rejects_bad_input():
    with pytest.raises(ValueError, match="size"):
        Layout(-1)
    with pytest.raises(ValueError, match="piece_size"):
        Layout(10, 0)
    with pytest.raises(TypeError, match="work_pieces"):
        Layout(10, 4, 1.5)
    with pytest.raises(IndexError):
        Layout(10, 4).piece_bytes(3)


@pytest.mark.parametrize("works,nranks", [(96, 3), (10, 4), (3, 8), (1000, 33), (0, 5)])
def test_initial_assignment_partitions_the_works(works, nranks):
    layout = Layout(works * 4, 1, 4)
    assert layout.works == works
    owned = [w for r in range(nranks) for w in layout.initial_works(r, nranks)]
    assert owned == list(range(works))
    sizes = [len(layout.initial_works(r, nranks)) for r in range(nranks)]
    assert max(sizes) - min(sizes) <= 1


def test_paper_example_ranges():
    """§4.2/4.3: 300 MB in 32 KB pieces = 9,600 pieces; A, B, C get
    0-3,199, 3,200-6,399, 6,400-9,599, i.e. works 0-31, 32-63, 64-95."""
    layout = Layout(9600 * PAPER_PIECE_SIZE, PAPER_PIECE_SIZE, PAPER_WORK_PIECES)
    assert layout.pieces == 9600 and layout.works == 96
    assert [layout.initial_works(r, 3) for r in range(3)] == [range(0, 32), range(32, 64), range(64, 96)]
    assert layout.work_pieces_of(32)[0] == 3200 and layout.work_pieces_of(63)[-1] == 6399


# ---------------------------------------------------------------- messages


def test_message_codes_are_stable_and_plain():
    expected = {
        1: "Bitfield",
        2: "Have",
        3: "Request",
        4: "Piece",
        5: "Cancel",
        6: "Choke",
        7: "Unchoke",
        8: "Interested",
        9: "NotInterested",
        10: "GiveWork",
        11: "GrantWorks",
        12: "NoWork",
        15: "Readmitted",  # 13 and 14 (Done, Complete to every rank) retired with protocol 3
        16: "Notice",
        17: "Watch",
    }
    assert {code: cls.__name__ for code, cls in MESSAGE_TYPES.items()} == expected
    assert (
        Have.FIELDS == ("piece",)
        and GrantWorks.FIELDS == ("works",)
        and Notice.FIELDS == ("kind", "rank", "span", "epoch")
    )
    assert Have(3) == Have(3) and hash(GrantWorks((1, 2))) == hash(GrantWorks((1, 2)))
    with pytest.raises(Exception):
        Have(3).piece = 4  # frozen


def test_bitfield_round_trip_and_length_check():
    import numpy as np

    have = np.zeros(11, bool)
    have[[0, 7, 8, 10]] = True
    bf = Bitfield.of(have)
    assert bf.bits == bytes([0b10000001, 0b10100000])  # MSB first, as BitTorrent
    assert (bf.unpack(11) == have).all()
    with pytest.raises(ValueError, match="bitfield"):
        bf.unpack(17)


# ---------------------------------------------------------------- works and stealing


def paper_nodes():
    layout = Layout(9600 * PAPER_PIECE_SIZE, PAPER_PIECE_SIZE, PAPER_WORK_PIECES)
    cfg = BcastConfig.paper()
    return layout, [BcastNode(r, 3, layout, "steal", cfg) for r in range(3)]


def test_steal_handover_of_the_paper_example():
    """§4.3: when A sends giveWork, B has fetched works 32-37 and holds
    [38..63]; it hands over the last 13, [51..63], and keeps [38..50]."""
    layout, (a, b, c) = paper_nodes()
    first = fetches(b.handle(0.0, Start()))
    assert [(f.first_piece, f.last_piece) for f in first] == [(3200, 3299)]  # one connection, head first
    running = first[0]
    for _ in range(6):  # works 32..37
        running = fetches(complete_fetch(b, 1.0, running))[0]
    assert layout.work_of(running.first_piece) == 38
    reply = b.handle(10.0, PeerMessage(0, GiveWork()))
    assert reply == [Send(0, GrantWorks(tuple(range(51, 64))))]
    assert list(b.planner.pending) == list(range(39, 51))  # 38 is being fetched

    # A ran out: it asks B or C, and fetches what B granted, in order.
    started = fetches(a.handle(0.0, Start()))
    running = started[0]
    actions = []
    for _ in range(32):
        actions = complete_fetch(a, 2.0, running)
        running = (fetches(actions) or [None])[0]
    ask = sends(actions, GiveWork)
    assert len(ask) == 1 and ask[0].peer in (1, 2) and running is None
    got = a.handle(10.0, PeerMessage(ask[0].peer, GrantWorks(tuple(range(51, 64)))))
    assert [layout.work_of(f.first_piece) for f in fetches(got)] == [51]
    assert list(a.planner.pending) == list(range(52, 64))


def test_victim_without_works_says_nowork_and_thief_tries_the_next():
    layout, (a, b, c) = paper_nodes()
    assert b.handle(0.0, PeerMessage(0, GiveWork())) == [Send(0, GrantWorks(tuple(range(48, 64))))]
    b.planner.pending.clear()
    assert b.handle(0.0, PeerMessage(0, GiveWork())) == [Send(0, NoWork())]
    a.planner.pending.clear()
    ask = sends(a.handle(0.0, Start()), GiveWork)[0]
    other = 3 - ask.peer
    actions = a.handle(0.1, PeerMessage(ask.peer, NoWork()))
    assert sends(actions, GiveWork) == [Send(other, GiveWork())]
    actions = a.handle(0.2, PeerMessage(other, NoWork()))
    assert sorted(s.peer for s in told(actions, DONE)) == [1, 2]  # nothing anywhere: storage phase over
    assert PhaseDone(1) in actions and a.storage_done_at == 0.2


def test_nonsteal_waits_for_every_done_before_the_exchange():
    layout = Layout(3 * 4 * 64 * KB, 64 * KB, 4)
    node = BcastNode(0, 3, layout, "nonsteal")
    (fetch,) = fetches(node.handle(0.0, Start()))
    actions = complete_fetch(node, 1.0, fetch)
    assert sorted(s.peer for s in told(actions, DONE)) == [1, 2] and not sends(actions, Bitfield)
    assert not sends(node.handle(2.0, PeerMessage(1, Notice(DONE, 1, 1))), Bitfield)
    opened = node.handle(3.0, PeerMessage(1, Notice(DONE, 2, 1)))  # relayed by rank 1: a fact is a fact
    assert sorted(s.peer for s in sends(opened, Bitfield)) == [1, 2]
    assert node.exchange_started_at == 3.0


def test_dead_peer_works_go_to_its_heir_and_granted_works_come_back():
    layout = Layout(4 * 8 * 64 * KB, 64 * KB, 4)  # 8 works, 2 per rank
    nodes = [BcastNode(r, 4, layout, "steal", BcastConfig(s3_connections=1)) for r in range(4)]
    for n in nodes:
        n.handle(0.0, Start())
    # rank 1 dies: rank 2 is its heir (next live rank), ranks 0 and 3 are not.
    assert not fetches(nodes[0].handle(1.0, PeerLost(1))) and not fetches(nodes[3].handle(1.0, PeerLost(1)))
    nodes[2].handle(1.0, PeerLost(1))
    assert list(nodes[2].planner.pending) == [5, 2, 3]
    # rank 2 dies too: rank 3 inherits both 1's and 2's works.
    nodes[3].handle(2.0, PeerLost(2))
    assert list(nodes[3].planner.pending) == [7, 2, 3, 4, 5]
    # works granted to a thief that dies come back to the granter.
    grant = nodes[0].handle(2.0, PeerMessage(3, GiveWork()))
    assert grant == [Send(3, GrantWorks((1,)))] and list(nodes[0].planner.pending) == []
    nodes[0].handle(3.0, PeerLost(3))
    assert 1 in nodes[0].planner.pending


def test_a_rank_counted_out_is_readmitted_with_nothing_of_its_own_to_fetch():
    """Rank 2 is unreachable at start: rank 3 (its heir) adopts its share. When it
    shows up, every rank readmits it and re-sends what it missed (Done); its heir
    tells it so, and rank 2 drops its own share (and the GETs of it under way):
    egress stays 1x."""
    layout = Layout(4 * 8 * 64 * KB, 64 * KB, 4)  # 8 works, 2 per rank
    cfg = BcastConfig(s3_connections=1)
    nodes = [BcastNode(r, 4, layout, "steal", cfg) for r in range(4)]
    for r in (0, 1, 3):
        nodes[r].handle(0.0, Start())
    for r in (0, 1, 3):
        nodes[r].handle(1.0, PeerLost(2))
    assert 2 in nodes[3].planner.adopted and {4, 5} <= set(nodes[3].planner.pending) | {
        layout.work_of(f.first_piece) for f in nodes[3].planner.fetches.values()
    }
    # a DONE notice passes rank 0 while rank 2 is out: rank 0 hands rank 2's part of the ring to rank 3
    passed = nodes[0].handle(1.5, PeerMessage(1, Notice(DONE, 1, 4)))
    assert 1 in nodes[0].planner.settled and told(passed, DONE, 3) and not told(passed, DONE, 2)
    welcome = nodes[0].handle(2.0, PeerJoined(2))
    assert not sends(welcome, Readmitted)  # rank 0 is not the heir
    assert {s.peer for s in told(welcome, JOINED)} == {1, 2}  # it tells the others (2 passes it to 3)
    assert told(welcome, DONE, 2) == [Send(2, Notice(DONE, 1, 2))]  # and the joiner what it missed
    assert 2 not in nodes[0].planner.dead and 2 in nodes[0].planner.settled
    assert nodes[0].handle(2.1, PeerJoined(2)) == []  # once only
    assert sends(nodes[3].handle(2.0, PeerJoined(2)), Readmitted, 2)  # the heir tells it its share is taken
    # The joiner started late: it planned its own share, then learns it was counted out.
    late = nodes[2]
    (first,) = fetches(late.handle(2.0, Start()))
    assert layout.work_of(first.first_piece) == 4
    actions = late.handle(2.1, PeerMessage(3, Readmitted()))
    assert CancelFetch(first.fetch_id) in actions
    assert not (set(late.planner.pending) & {4, 5}) and not fetches(actions)
    # A rank that was never counted out is not readmitted (nothing to do).
    assert nodes[3].handle(3.0, PeerJoined(1)) == []


def test_a_readmitted_rank_that_finished_is_told_complete_again():
    layout = Layout(2 * 64 * KB, 64 * KB, 1)
    node = BcastNode(0, 2, layout, "steal")
    for f in fetches(node.handle(0.0, Start())):
        complete_fetch(node, 0.5, f)
    for f in fetches(node.handle(1.0, PeerLost(1))):  # its heir: rank 1's work is ours now
        complete_fetch(node, 1.5, f)
    assert node.finished
    back = node.handle(2.0, PeerJoined(1))
    assert told(back, COMPLETE, 1) and sends(back, Readmitted, 1)
    assert not node.quiescent()  # it waits for the readmitted rank to complete again


def test_storage_failures_are_retried_then_fail_the_node():
    layout = Layout(4 * 64 * KB, 64 * KB, 4)
    node = BcastNode(0, 1, layout, "flat", BcastConfig(max_fetch_attempts=3))
    (fetch,) = fetches(node.handle(0.0, Start()))
    # pieces 0-1 arrive, piece 2 is corrupt, the GET gives up: fetch 2..3 again
    node.handle(0.1, S3Piece(fetch.fetch_id, 0))
    node.handle(0.1, S3Piece(fetch.fetch_id, 1))
    node.handle(0.1, S3Piece(fetch.fetch_id, 2, ok=False))
    (retry,) = fetches(node.handle(0.2, S3FetchFailed(fetch.fetch_id, "timeout")))
    assert (retry.first_piece, retry.last_piece) == (2, 3) and not node.have[2]
    (retry,) = fetches(node.handle(0.3, S3FetchFailed(retry.fetch_id)))
    failed = node.handle(0.4, S3FetchFailed(retry.fetch_id))
    assert any(isinstance(a, Failed) for a in failed) and node.failed
    assert node.handle(0.5, Tick()) == []


# ---------------------------------------------------------------- piece exchange


def exchanging_node(**cfg):
    """Rank 0 of 3, exchange open from the start, both others hold everything and unchoke it."""
    layout = Layout(3 * 8 * 64 * KB, 64 * KB, 8)  # 24 pieces, 1 work per rank
    node = BcastNode(0, 3, layout, "nonsteal", BcastConfig(overlap_phases=True, s3_connections=1, **cfg))
    node.handle(0.0, Start())
    full = Bitfield(Bitfield.of(__import__("numpy").ones(layout.pieces, bool)).bits)
    requests = []
    for peer in (1, 2):
        node.handle(0.0, PeerMessage(peer, full))
        requests += sends(node.handle(0.0, PeerMessage(peer, Unchoke())), Request)
    return node, requests


@pytest.mark.parametrize("neediest", [False, True])
def test_choke_round_serves_best_uploaders_or_the_neediest(neediest):
    """Six interested neighbours, one upload slot (plus the optimistic one): BitTorrent's rule
    keeps the neighbour that uploaded most to us; serve_neediest the one holding fewest pieces."""
    import numpy as np
    from parcomm.apps.bcast.messages import Interested

    layout = Layout(7 * 8 * 64 * KB, 64 * KB, 8)  # 56 pieces
    cfg = BcastConfig(overlap_phases=True, upload_slots=1, serve_neediest=neediest, choke_interval=1.0)
    node = BcastNode(0, 7, layout, "nonsteal", cfg)
    node.handle(0.0, Start())
    node.have[:8] = True  # something to offer
    for peer in range(6, 0, -1):  # the first two interested (6 and 5) fill the free slots at once
        has = np.zeros(layout.pieces, bool)
        has[8 : 8 + 5 * peer] = True  # peer 1 holds least, peer 6 most
        node.handle(0.0, PeerMessage(peer, Bitfield.of(has)))
        node.handle(0.0, PeerMessage(peer, Interested()))
    node.exchange.neighbours[5].received_round = 10 * layout.piece_size  # peer 5 uploaded most to us
    actions = node.handle(1.0, Tick())
    unchoked = {p for p, nb in node.exchange.neighbours.items() if not nb.am_choking}
    regular = 1 if neediest else 5
    assert regular in unchoked and len(unchoked) == 2  # + one optimistic
    assert all(a.peer in unchoked for a in sends(actions, Unchoke))
    assert bool(sends(actions, Unchoke, 1)) == neediest  # the round switched to the neediest


def test_requests_skip_pieces_being_fetched_and_are_bounded_per_peer():
    node, requests = exchanging_node(max_requests=3)
    assert len(requests) == 6 and len({r.msg.piece for r in requests}) == 6
    assert all(r.msg.piece >= 8 for r in requests)  # pieces 0-7 come from our own GET


def test_corrupt_piece_bans_sender_and_is_requested_elsewhere():
    node, requests = exchanging_node(max_requests=9)  # 16 pieces to get: 9 from rank 1, 7 from rank 2
    assert len(sends(requests, peer=2)) == 7
    bad = next(r.msg.piece for r in requests if r.peer == 1)
    actions = node.handle(1.0, PeerPiece(1, bad, ok=False))
    assert [a for a in actions if isinstance(a, Drop)] == [Drop(1, f"piece {bad} failed verification")]
    assert not node.have[bad] and node.bytes_from_peers == 0
    assert Send(2, Request(bad)) in actions
    assert node.handle(1.1, PeerMessage(1, Have(bad))) == []  # banned: ignored
    assert node.handle(1.2, PeerPiece(1, bad, ok=True)) == [] and not node.have[bad]


def test_stalled_peer_is_dropped_and_its_requests_reissued():
    node, requests = exchanging_node(max_requests=2, stall_timeout=10.0, choke_interval=5.0)
    stalled = [r.msg.piece for r in sends(requests, peer=1)]
    serving = [r.msg.piece for r in sends(requests, peer=2)]
    drops, now = [], 4.0
    while not drops and now < 30:  # rank 2 serves every request, rank 1 none
        actions = []
        for piece in serving:
            actions += node.handle(now, PeerPiece(2, piece))
        actions += node.handle(node.next_deadline(), Tick())
        drops = [a for a in actions if isinstance(a, Drop)]
        serving = [r.msg.piece for r in sends(actions, Request, peer=2)]
        now += 5.0
    assert [d.peer for d in drops] == [1] and drops[0].reason.startswith("stalled")
    assert 10.0 <= now - 1.0 <= 10.0 + 5.0  # within stall_timeout + choke_interval
    assert 1 not in node.exchange.neighbours
    assert all(node.exchange.requested[p] == 0 or p in serving for p in stalled)
    asked = set(serving)
    for _ in range(10):  # rank 2 keeps serving: the stalled pieces come from it
        actions = []
        for piece in serving:
            actions += node.handle(now, PeerPiece(2, piece))
        serving = [r.msg.piece for r in sends(actions, Request, peer=2)]
        asked.update(serving)
    assert set(stalled) <= asked and node.have[stalled].all()


def test_node_finishes_from_storage_and_peers_and_counts_bytes_once():
    node, requests = exchanging_node(max_requests=100)
    (fetch,) = [a for a in node.planner.fetching()]
    for r in requests:
        node.handle(1.0, PeerPiece(r.peer, r.msg.piece))
    node.handle(1.0, PeerPiece(2, requests[0].msg.piece))  # a duplicate
    actions = []
    for p in range(fetch.first_piece, fetch.last_piece + 1):
        actions += node.handle(2.0, S3Piece(0, p))
    assert node.finished_at == 2.0 and Finished() in actions
    assert node.bytes_from_storage + node.bytes_from_peers == node.layout.size
    assert node.bytes_from_storage == 8 * 64 * KB


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="peers"):
        BcastConfig(peers=0)
    with pytest.raises(TypeError, match="overlap_phases"):
        BcastConfig(overlap_phases=1)
    with pytest.raises(ValueError, match="algo"):
        BcastNode(0, 1, Layout(1), "tree")


def test_codec_round_trips_every_message():
    from parcomm.apps.bcast import codec
    from parcomm.apps.bcast.messages import Bitfield, Piece

    samples = [Bitfield(b"\xff\x80"), Have(7), GrantWorks(tuple(range(300))), Notice(3, 2, 1), Watch(), Piece(5)]
    for msg in samples:
        data = b"payload" if isinstance(msg, Piece) else None
        back, payload = codec.decode(codec.encode(msg, data))
        assert back == msg and payload == data


def test_a_finished_node_waits_until_every_rank_is_complete():
    """A node may leave only when every live rank said Complete: a late rank
    may still need pieces that only this node holds."""
    from parcomm.apps.bcast.layout import Layout
    from parcomm.apps.bcast.messages import PeerLost, PeerMessage, S3FetchDone, S3Piece, Start
    from parcomm.apps.bcast.node import BcastNode

    node = BcastNode(2, 3, Layout(10, 10, 1), "nonsteal")  # one work: rank 2's
    fetch = next(a for a in node.handle(0.0, Start()) if type(a).__name__ == "FetchStorage")
    node.handle(0.1, S3Piece(fetch.fetch_id, 0))
    node.handle(0.1, S3FetchDone(fetch.fetch_id))
    assert node.finished and not node.quiescent()
    node.handle(0.2, PeerMessage(0, Notice(COMPLETE, 0, 1)))
    assert not node.quiescent()
    node.handle(0.3, PeerLost(1))
    assert node.quiescent()


# ---------------------------------------------------------------- notices (lazy connections)


def _spread(n, origin, dead=frozenset(), swallow=frozenset()):
    """Pass one notice from ``origin`` down its tree; ranks in ``swallow`` receive
    it and die before forwarding. Returns (states, receipts per rank, edges used)."""
    from parcomm.apps.bcast.notices import Notices

    states = [Notices(r, n) for r in range(n)]
    queue = [(origin, s) for s in states[origin].spread(DONE, origin, n, dead)]
    got, edges = [0] * n, set()
    while queue:
        src, send = queue.pop(0)
        edges.add((src, send.peer))
        got[send.peer] += 1
        if send.peer not in swallow:
            queue += [(send.peer, s) for s in states[send.peer].spread(DONE, origin, send.msg.span, dead)]
    return states, got, edges


@pytest.mark.parametrize("n", [2, 3, 7, 16, 33, 64, 100])
def test_a_notice_reaches_every_rank_once_over_overlay_edges(n):
    from parcomm.apps.bcast.notices import overlay

    for origin in {0, 1, n // 2, n - 1}:
        _, got, edges = _spread(n, origin)
        assert got == [0 if r == origin else 1 for r in range(n)]  # N - 1 messages, nobody twice
        assert all((dst - src) % n & ((dst - src) % n - 1) == 0 for src, dst in edges)  # src + 2^k
        assert all(dst in overlay(src, n) and src in overlay(dst, n) for src, dst in edges)


def test_dead_ranks_are_skipped_and_a_cut_off_subtree_is_served_again():
    n, origin = 64, 5
    dead = {6, 7, 13, 37}
    _, got, _ = _spread(n, origin, dead=dead)
    assert all(got[r] == 1 for r in range(n) if r not in dead | {origin}) and not any(got[r] for r in dead)
    # rank 37 (origin + 32: the root of half the ring) dies with the notice in hand
    states, got, _ = _spread(n, origin, swallow={37})
    missing = {r for r in range(n) if r != origin and not got[r]}
    assert len(missing) == 31  # its whole subtree
    now_dead = {37}
    repairs = [(r, s) for r in range(n) if r != 37 for s in states[r].reroute(37, now_dead)]
    assert [(r, s.peer, s.msg.span) for r, s in repairs] == [(origin, 38, 31)]  # its parent hands on its range
    queue = repairs
    while queue:
        _, send = queue.pop(0)
        missing.discard(send.peer)
        queue += [(send.peer, s) for s in states[send.peer].spread(DONE, origin, send.msg.span, now_dead)]
    assert not missing


def test_notices_out_of_bounds_are_ignored():
    node = BcastNode(0, 4, Layout(4 * 64 * KB, 64 * KB, 1), "nonsteal")
    for bad in (Notice(7, 1, 1), Notice(DONE, 4, 1), Notice(DONE, -1, 1), Notice(DONE, 1, 0), Notice(DONE, 1, 5)):
        assert node.handle(1.0, PeerMessage(1, bad)) == []
    assert not node.planner.settled


def test_a_rank_counted_out_while_alive_says_it_is_back():
    node = BcastNode(2, 8, Layout(8 * 64 * KB, 64 * KB, 1), "nonsteal")
    node.handle(0.0, Start())
    back = node.handle(1.0, PeerMessage(1, Notice(LOST, 2, 1, epoch=1)))
    assert sorted(s.peer for s in told(back, JOINED)) == [3, 4, 6]  # 2 + 1, 2 + 2, 2 + 4
    assert {s.msg.epoch for s in told(back, JOINED)} == {2} and not told(back, LOST)
    # the same count-out relayed again, or an older one: already answered
    assert node.handle(1.1, PeerMessage(5, Notice(LOST, 2, 1, epoch=1))) == []


def test_membership_facts_that_cross_apply_in_epoch_order():
    """Rank 3 is counted out by one node (lost, epoch 1) and readmitted by another (joined,
    epoch 2); the two notices reach rank 0 in the wrong order: the late count-out is dropped."""
    node = BcastNode(0, 8, Layout(8 * 64 * KB, 64 * KB, 1), "nonsteal")
    node.handle(0.0, Start())
    node.handle(1.0, PeerMessage(1, Notice(JOINED, 3, 1, epoch=2)))
    assert 3 not in node.planner.dead
    assert node.handle(1.1, PeerMessage(2, Notice(LOST, 3, 1, epoch=1))) == []
    assert 3 not in node.planner.dead
    # a later loss (epoch 3) still counts it out, and we pass it on with its epoch
    later = node.handle(1.2, PeerMessage(2, Notice(LOST, 3, 2, epoch=3)))
    assert 3 in node.planner.dead and {s.msg.epoch for s in told(later, LOST)} == {3}
    # our own sockets seeing it come back originate the next epoch
    back = node.handle(1.3, PeerJoined(3))
    assert 3 not in node.planner.dead and {s.msg.epoch for s in told(back, JOINED)} == {4}


def test_membership_notices_with_a_wrong_epoch_are_ignored():
    node = BcastNode(0, 4, Layout(4 * 64 * KB, 64 * KB, 1), "nonsteal")
    node.handle(0.0, Start())
    for bad in (Notice(LOST, 1, 1, 0), Notice(LOST, 1, 1, 2), Notice(JOINED, 1, 1, 0), Notice(JOINED, 1, 1, 3)):
        assert node.handle(1.0, PeerMessage(2, bad)) == [], bad
    assert node.handle(1.0, PeerMessage(2, Notice(LOST, 1, 1, 1 << 32 | 1))) == []  # past a u32
    assert 1 not in node.planner.dead
