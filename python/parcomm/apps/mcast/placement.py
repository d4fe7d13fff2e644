"""Where to put repair routers: minimize the mean delay over receivers for a
budget of k repair routers or of retransmission buffer (seed 003 §3: "再送の
効果が大きな箇所に優先的に再送可能なルータを配置").

The objective is the model's mean delay over receivers
(:func:`parcomm.models.multicast.analyze`, default convention "route"); the
buffer is the system-wide retransmission buffer (source included, §4 1.4).
The source always repairs; the optimizer chooses among ``candidates``
(default: every router) and ignores the repair flags already in the tree.

Methods
=======

* ``"dp"`` — exact, for the "route" convention, any tree size. With route
  costs, the total delay is a sum over the repair routers and receivers s of
  ``w_s x 2T(r, s) / P(r, s)``, where r is s's nearest repair point above and
  w_s the number of receivers at or below s. A dynamic program over the tree
  with state (node v, nearest repair point above v, routers used below v)
  and min-plus merges of the children's tables gives the optimum for every
  k = 0..K in one pass (O(N · depth · K) table entries), and backtracking
  gives the placement for any k. Adding a repair router never increases any
  receiver's route delay ((a+b)/(pq) >= a/p + b/q), so "exactly k" and "at
  most k" coincide.
* ``"exhaustive"`` — every subset (up to :data:`EXHAUSTIVE_LIMIT` subsets);
  exact for any convention.
* ``"greedy"`` — add the router that lowers the mean delay most (or most
  per byte of added buffer), one at a time; any convention. For "route" the
  gains are updated incrementally (only the split domain changes), otherwise
  the model is re-evaluated for every candidate (O(R² · N)). Greedy is *not*
  exact: the cost 2T/(1-E)^n of a stretch is convex in its length, so the
  best pair need not contain the best single router. On study 4's route the
  best single repair router is r4 (the middle), but the best pair is r1 r7
  (the backbone's ends, 377.0 ms) while greedy's r4 + r1 gives 384.4 ms;
  on a uniform route of 6 lossy networks greedy likewise misses k = 2.
  It matches the exhaustive optimum on studies 1-3 and 5 and on random
  small trees most of the time (tests/test_mcast_model.py).
* ``method="auto"``: "dp" for "route", else "exhaustive" when the subsets
  are few enough, else "greedy".

A **buffer budget** is solved exactly by "exhaustive"; otherwise the result
is the best placement within the budget among: the greedy chains (by gain
and by gain per added byte) run until nothing more fits, the same chains
started from the backbone/LAN boundary routers (:func:`boundary_routers`,
the paper's recommendation) when those fit, and, for "route", the DP's
k-optimal placements for 33 sizes k. This is a heuristic, because the
buffer (a maximum round trip per domain) does not decompose the way the
delay does; on random 7-router trees it finds the exhaustive optimum in
99 % of budgets (396 of 400) (tests/test_mcast_model.py checks feasibility and
the bound).

:func:`tradeoff` gives the curve k = 0..R (delay and buffer of the best
placement of each size); :func:`boundary_routers` picks the routers at the
backbone/local-network boundaries (§5, the paper's recommendation).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ...platform.mcast_tree import Tree, validate

__all__ = [
    "EXHAUSTIVE_LIMIT",
    "Placement",
    "place",
    "tradeoff",
    "optimal_dp",
    "exhaustive",
    "greedy",
    "evaluate",
    "boundary_routers",
]

#: The largest number of subsets "auto" enumerates (2^16).
EXHAUSTIVE_LIMIT = 1 << 16
METHODS = ("auto", "dp", "exhaustive", "greedy")


@dataclass
class Placement:
    routers: list[str]  # the repair routers chosen (preorder)
    mean_delay_s: float
    max_delay_s: float
    buffer_total_bytes: float
    buffer_max_bytes: float
    method: str
    convention: str

    @property
    def k(self) -> int:
        return len(self.routers)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "k": self.k}


# ---------------------------------------------------------------- evaluation


class _Prepared:
    """The tree as flat arrays, for fast repeated evaluation of placements."""

    def __init__(self, tree: Tree, rate_bps: float | None, serialization: bool):
        self.tree = tree
        order = tree.order
        self.index = {v: i for i, v in enumerate(order)}
        n = len(order)
        self.n = n
        self.names = order
        self.parent = [-1] * n
        self.depth = [0.0] * n
        self.logp = [0.0] * n
        self.hop_logp = [0.0] * n
        self.is_rcv = [tree.nodes[v].kind == "receiver" for v in order]
        self.is_router = [tree.nodes[v].kind == "router" for v in order]
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, v in enumerate(order[1:], start=1):
            e = tree.parent_net[v]
            p = self.index[e.parent]
            hop = e.delay_s + (tree.packet_bytes * 8 / e.rate_bps if serialization else 0.0)
            self.parent[i] = p
            self.depth[i] = self.depth[p] + hop
            self.hop_logp[i] = math.log1p(-e.loss)
            self.logp[i] = self.logp[p] + self.hop_logp[i]
            self.children[p].append(i)
        self.below = [0] * n
        for i in range(n - 1, -1, -1):
            if self.is_rcv[i]:
                self.below[i] += 1
            if i:
                self.below[self.parent[i]] += self.below[i]
        self.receivers = self.below[0]
        self.rate = min(e.rate_bps for e in tree.networks.values()) if rate_bps is None else float(rate_bps)

    def evaluate(self, repair: Iterable[int], convention: str) -> tuple[float, float, float, float]:
        """(mean delay, max delay, total buffer, max buffer) for the repair set."""
        point = [False] * self.n
        point[0] = True
        for i in repair:
            point[i] = True
        anchor = [0] * self.n
        far = [0.0] * self.n
        ldom = [0.0] * self.n
        par, depth, logp = self.parent, self.depth, self.logp
        for i in range(1, self.n):
            p = par[i]
            a = p if point[p] else anchor[p]
            anchor[i] = a
            ldom[a] += self.hop_logp[i]
            if point[i] or self.is_rcv[i]:
                d = depth[i] - depth[a]
                if d > far[a]:
                    far[a] = d
        D = [0.0] * self.n
        total = 0.0
        worst = 0.0
        for i in range(1, self.n):
            if not (point[i] or self.is_rcv[i]):
                continue
            a = anchor[i]
            if convention == "route":
                D[i] = D[a] + 2.0 * (depth[i] - depth[a]) / math.exp(logp[i] - logp[a])
            else:  # fanout
                D[i] = D[a] + 2.0 * far[a] / math.exp(ldom[a])
            if self.is_rcv[i]:
                total += D[i]
                worst = max(worst, D[i])
        bufs = [self.rate / 8.0 * 2.0 * far[i] for i in range(self.n) if point[i]]
        return total / self.receivers, worst, sum(bufs), max(bufs)


def _candidates(prep: _Prepared, candidates: Iterable[str] | None) -> list[int]:
    if candidates is None:
        return [i for i in range(prep.n) if prep.is_router[i]]
    out = []
    for c in candidates:
        if c not in prep.index:
            raise ValueError(f"candidate {c!r}: unknown node")
        i = prep.index[c]
        if not prep.is_router[i]:
            raise ValueError(f"candidate {c!r}: is a {prep.tree.nodes[c].kind}, only routers repair")
        out.append(i)
    return sorted(set(out))


def _evaluator(tree: Tree, convention: str, rate_bps: float | None, serialization: bool):
    from ...models.multicast import CONVENTIONS, analyze

    if convention not in CONVENTIONS:
        raise ValueError(f"convention = {convention!r}: must be one of {', '.join(CONVENTIONS)}")
    prep = _Prepared(tree, rate_bps, serialization)
    if convention in ("route", "fanout"):
        return prep, lambda s: prep.evaluate(s, convention)

    def full(s: Iterable[int]) -> tuple[float, float, float, float]:
        r = analyze(
            tree,
            convention=convention,
            repair=[prep.names[i] for i in s],
            rate_bps=prep.rate,
            serialization=serialization,
        )
        return r.mean_delay_s, r.max_delay_s, r.buffer_total_bytes, r.buffer_max_bytes

    return prep, full


def _placement(prep: _Prepared, s: Iterable[int], vals, method: str, convention: str) -> Placement:
    routers = [prep.names[i] for i in sorted(s)]
    return Placement(routers, vals[0], vals[1], vals[2], vals[3], method, convention)


def evaluate(
    tree: Tree | Mapping,
    routers: Iterable[str],
    *,
    convention: str = "route",
    rate_bps: float | None = None,
    serialization: bool = False,
) -> Placement:
    """The mean delay and buffers when exactly ``routers`` repair."""
    t = validate(tree)
    prep, ev = _evaluator(t, convention, rate_bps, serialization)
    s = _candidates(prep, routers)
    return _placement(prep, s, ev(s), "given", convention)


# ---------------------------------------------------------------- methods


def exhaustive(
    tree: Tree | Mapping,
    *,
    routers: int | None = None,
    buffer_bytes: float | None = None,
    convention: str = "route",
    candidates: Iterable[str] | None = None,
    rate_bps: float | None = None,
    serialization: bool = False,
    limit: int = EXHAUSTIVE_LIMIT,
) -> list[Placement]:
    """Best placement for every size k = 0..min(routers, R) by enumeration
    (index k of the result; with ``buffer_bytes``, only placements within the
    budget count and sizes with none are left out)."""
    t = validate(tree)
    prep, ev = _evaluator(t, convention, rate_bps, serialization)
    cands = _candidates(prep, candidates)
    kmax = len(cands) if routers is None else min(routers, len(cands))
    count = sum(math.comb(len(cands), k) for k in range(kmax + 1))
    if count > limit:
        raise ValueError(
            f"exhaustive search over {count} placements exceeds the limit of {limit}; use method 'dp' or 'greedy'"
        )
    best: list[Placement] = []
    for k in range(kmax + 1):
        top = None
        for s in itertools.combinations(cands, k):
            vals = ev(s)
            if buffer_bytes is not None and vals[2] > buffer_bytes * (1 + 1e-12):
                continue
            key = (round(vals[0], 15), vals[2])
            if top is None or key < top[0]:
                top = (key, s, vals)
        if top is not None:
            best.append(_placement(prep, top[1], top[2], "exhaustive", convention))
    return best


def greedy(
    tree: Tree | Mapping,
    *,
    routers: int | None = None,
    buffer_bytes: float | None = None,
    convention: str = "route",
    candidates: Iterable[str] | None = None,
    rate_bps: float | None = None,
    serialization: bool = False,
    rank: str = "gain",
) -> list[Placement]:
    """The greedy chain k = 0, 1, ...: each step adds the router that lowers
    the mean delay most (``rank="gain"``; ties: smaller buffer, then
    preorder) or most per byte of added buffer (``rank="ratio"``), among
    those that keep the system buffer within ``buffer_bytes`` if given.

    For "route" the gains are kept incrementally (adding a router changes
    only the repair domain it splits), so a step costs O(size of that
    domain); other conventions re-evaluate the model for every candidate.
    """
    t = validate(tree)
    prep, ev = _evaluator(t, convention, rate_bps, serialization)
    order = _greedy_order(prep, ev, convention, candidates, routers, buffer_bytes, rank)
    return [_placement(prep, order[:k], ev(order[:k]), f"greedy-{rank}", convention) for k in range(len(order) + 1)]


def _greedy_order(
    prep: _Prepared, ev, convention: str, candidates, routers, buffer_bytes, rank: str, start: Sequence[int] = ()
) -> list[int]:
    if rank not in ("gain", "ratio"):
        raise ValueError(f"rank = {rank!r}: must be 'gain' or 'ratio'")
    cands = _candidates(prep, candidates)
    kmax = len(cands) if routers is None else min(routers, len(cands))
    budget = math.inf if buffer_bytes is None else buffer_bytes * (1 + 1e-12)
    if convention == "route":
        order = _RouteChain(prep, cands, start).run(kmax, budget, rank)
    else:
        order = list(start)
        base = ev(order)
        cur_mean, cur_buf = base[0], base[2]
        left = [c for c in cands if c not in order]
        for _ in range(kmax):
            top = None
            for c in left:
                vals = ev(order + [c])
                if vals[2] > budget:
                    continue
                gain, dbuf = cur_mean - vals[0], vals[2] - cur_buf
                if rank == "gain":
                    key = (-round(gain, 15), dbuf)
                else:
                    key = (-(math.inf if dbuf <= 0 else gain / dbuf), -gain)
                if top is None or key < top[0]:
                    top = (key, c, vals)
            if top is None:
                break
            order.append(top[1])
            left.remove(top[1])
            cur_mean, cur_buf = top[2][0], top[2][2]
    return order


class _RouteChain:
    """Incremental greedy for the "route" convention.

    For a candidate v inside the domain of repair point r, let a and p1 be
    the delay and success probability from r to v, and for the frontier
    members s below v (weights w_s = receivers at or below s) b_s and q_s
    those from v to s. Repairing at v turns each route's stretch cost
    2(a+b)/(p1 q) into 2a/p1 + 2b/q, so the total delay drops by
    2[(a/p1)(X - W) + (1/p1 - 1) Y] with W = Σw_s, X = Σw_s/q_s and
    Y = Σw_s b_s/q_s, all accumulated bottom-up in one pass over the domain.
    The buffer changes by B/8 · 2[max(outside(v), a) + H_v - H_r] (H: the
    farthest frontier member; outside(v): the farthest one not below v).
    """

    def __init__(self, prep: _Prepared, cands: list[int], start: Iterable[int] = ()):
        self.p = prep
        self.cand = [False] * prep.n
        for c in cands:
            self.cand[c] = True
        self.point = [False] * prep.n
        self.point[0] = True
        self.start = sorted(set(start))
        for v in self.start:
            self.point[v] = True
        self.info: dict[int, tuple[float, float]] = {}  # candidate -> (gain, dbuf)
        self.members: dict[int, list[int]] = {}  # repair point -> candidates in its domain
        self.height: dict[int, float] = {}  # repair point -> H
        self.anchor_of: dict[int, int] = {}
        for r in [0] + self.start:
            self._domain(r)
            for x in self.members[r]:
                self.anchor_of[x] = r

    def _domain(self, r: int) -> None:
        p = self.p
        for v in self.members.pop(r, []):
            self.info.pop(v, None)
        dom = [r]
        stack = [r]
        while stack:
            u = stack.pop()
            for c in p.children[u]:
                dom.append(c)
                if not (self.point[c] or p.is_rcv[c]):
                    stack.append(c)
        inner = {r} | {u for u in dom if not (self.point[u] or p.is_rcv[u])}
        W: dict[int, float] = {}
        X: dict[int, float] = {}
        Y: dict[int, float] = {}
        H: dict[int, float] = {}
        for u in reversed(dom):
            if u not in inner:
                W[u] = X[u] = float(p.below[u])
                Y[u] = 0.0
                H[u] = 0.0
                continue
            w = x = y = h = 0.0
            for c in p.children[u]:
                t = p.depth[c] - p.depth[u]
                inv = math.exp(-p.hop_logp[c])
                w += W[c]
                x += X[c] * inv
                y += (t * X[c] + Y[c]) * inv
                h = max(h, t + H[c])
            W[u], X[u], Y[u], H[u] = w, x, y, h
        self.height[r] = H[r]
        # Top-down: farthest frontier member outside each inner node's subtree.
        outside = {r: -math.inf}
        scale = self.p.rate / 8.0 * 2.0
        mem = []
        for u in dom:
            if u not in inner:
                continue
            kids = p.children[u]
            vals = [p.depth[c] - p.depth[r] + H[c] for c in kids]
            best1 = max(vals)
            i1 = vals.index(best1)
            best2 = max((v for i, v in enumerate(vals) if i != i1), default=-math.inf)
            for i, c in enumerate(kids):
                if c in inner:
                    outside[c] = max(outside[u], best2 if i == i1 else best1)
            if u != r and self.cand[u]:
                a = p.depth[u] - p.depth[r]
                p1 = math.exp(p.logp[u] - p.logp[r])
                gain = 2.0 * ((a / p1) * (X[u] - W[u]) + (1.0 / p1 - 1.0) * Y[u])
                dbuf = scale * (max(outside[u], a) + H[u] - H[r])
                self.info[u] = (gain, dbuf)
                mem.append(u)
        self.members[r] = mem

    def run(self, kmax: int, budget: float, rank: str, lam: float = 0.0) -> list[int]:
        """Add routers one by one. ``rank``: "gain" (largest delay drop),
        "ratio" (largest drop per added byte) or "lagrange" (largest
        drop - lam x added bytes, only while positive)."""
        order: list[int] = list(self.start)
        buf = self.p.rate / 8.0 * 2.0 * sum(self.height.values())
        anchor_of = self.anchor_of
        while len(order) < kmax and self.info:
            top = None
            for v, (gain, dbuf) in self.info.items():
                if buf + dbuf > budget:
                    continue
                if rank == "gain":
                    key = (-round(gain / self.p.receivers, 15), dbuf, v)
                elif rank == "ratio":
                    key = (-(math.inf if dbuf <= 0 else gain / dbuf), -gain, v)
                else:
                    if gain - lam * dbuf <= 0:
                        continue
                    key = (-(gain - lam * dbuf), dbuf, v)
                if top is None or key < top[0]:
                    top = (key, v)
            if top is None:
                break
            v = top[1]
            r = anchor_of[v]
            buf += self.info[v][1]
            self.point[v] = True
            order.append(v)
            self._domain(r)
            self._domain(v)
            for x in self.members[r]:
                anchor_of[x] = r
            for x in self.members[v]:
                anchor_of[x] = v
        return order


def optimal_dp(
    tree: Tree | Mapping,
    *,
    routers: int | None = None,
    candidates: Iterable[str] | None = None,
    rate_bps: float | None = None,
    serialization: bool = False,
    ks: Iterable[int] | None = None,
) -> list[Placement]:
    """Exact optimum of the "route" mean delay for every k = 0..min(routers, R)
    (or only the sizes in ``ks``), by dynamic programming on the tree."""
    t = validate(tree)
    prep, ev = _evaluator(t, "route", rate_bps, serialization)
    cands = _candidates(prep, candidates)
    is_cand = [False] * prep.n
    for c in cands:
        is_cand[c] = True
    kmax = len(cands) if routers is None else min(routers, len(cands))
    dp = _RouteDP(prep, is_cand, kmax)
    sizes = range(kmax + 1) if ks is None else sorted({k for k in ks if 0 <= k <= kmax})
    out = []
    for k in sizes:
        if k >= len(dp.total) or not math.isfinite(dp.total[k]):
            continue
        s = dp.backtrack(k)
        vals = ev(s)
        out.append(_placement(prep, s, vals, "dp", "route"))
    return out


class _RouteDP:
    """The dynamic program behind :func:`optimal_dp`, solved once for every k = 0..kmax.

    ``F[v][row, j]`` is the least sum of the stretch costs from v's anchor down to the
    receivers below v (each stretch weighted by the receivers behind it) when v's nearest
    repair point above is ``anc[v][row]`` and j repair routers are placed at v or below. The tables are
    built bottom-up; only the merge records (``memo``, ``root_args``) are kept, enough to
    backtrack a placement for any k, and ``total[k]`` is the optimum with k routers.
    """

    def __init__(self, prep: _Prepared, is_cand: list[bool], kmax: int):
        import numpy as np

        self.prep = prep
        self.is_cand = is_cand
        self.kmax = kmax
        self.depth = np.asarray(prep.depth)
        self.logp = np.asarray(prep.logp)
        self.anc = _possible_anchors(prep, is_cand)
        self.memo: list[Any] = [None] * prep.n  # per router: (NR merge args, RP merge args, choice)
        self.total, self.root_args = self._solve()

    def _cost(self, a_idx: list[int], v: int) -> Any:
        """The stretch cost 2T/P from each anchor in ``a_idx`` down to v (one row per anchor)."""
        import numpy as np

        a = np.asarray(a_idx)
        return 2.0 * (self.depth[v] - self.depth[a]) / np.exp(self.logp[v] - self.logp[a])

    def _solve(self) -> tuple[Any, list[Any]]:
        """Fill the tables from the leaves up and merge the source's children: the optimum for
        each k, and the root merge's records."""
        prep = self.prep
        F: list[Any] = [None] * prep.n
        for v in range(prep.n - 1, 0, -1):
            if prep.is_rcv[v]:
                F[v] = self._cost(self.anc[v], v)[:, None]
                continue
            F[v] = self._router_table(v, F)
            for c in prep.children[v]:
                F[c] = None  # backtracking needs only the merge records
        root_tables = [F[c][0:1] for c in prep.children[0]]
        total, root_args = _minplus_merge(root_tables, self.kmax)
        return total[0], root_args

    def _router_table(self, v: int, F: list[Any]) -> Any:
        """Router v's table from its children's: the better, per anchor row and budget, of not
        repairing at v (children keep v's anchors) and, for a candidate, repairing at v
        (children anchored at v, one router spent, v's own stretch cost added)."""
        import numpy as np

        prep = self.prep
        rows = len(self.anc[v])
        kids = prep.children[v]
        nr, nr_args = _minplus_merge([F[c][:rows] for c in kids], self.kmax)
        if not self.is_cand[v]:
            self.memo[v] = (nr_args, None, None)
            return nr
        rp, rp_args = _minplus_merge([F[c][rows : rows + 1] for c in kids], self.kmax)
        width = min(max(nr.shape[1], rp.shape[1] + 1), self.kmax + 1)
        out = np.full((rows, width), math.inf)
        out[:, : nr.shape[1]] = nr[:, :width]
        rep = np.full((rows, width), math.inf)
        wv = prep.below[v]
        m = min(rp.shape[1], width - 1)
        rep[:, 1 : 1 + m] = wv * self._cost(self.anc[v], v)[:, None] + rp[:, :m]
        choice = rep < out
        out[choice] = rep[choice]
        self.memo[v] = (nr_args, rp_args, choice)
        return out

    def backtrack(self, k: int) -> list[int]:
        """The repair routers of an optimal placement of k routers, read off the merge records."""
        prep = self.prep
        chosen: list[int] = []
        # (node, anchor row, budget) for the source's children.
        stack = [(c, 0, j) for c, j in _split(prep.children[0], self.root_args, 0, k)]
        while stack:
            v, row, j = stack.pop()
            if prep.is_rcv[v]:
                continue
            nr_args, rp_args, choice = self.memo[v]
            kids = prep.children[v]
            if choice is not None and j < choice.shape[1] and choice[row, j]:
                chosen.append(v)
                r = len(self.anc[v])
                stack += [(c, r, jj) for c, jj in _split(kids, rp_args, 0, j - 1)]
            else:
                stack += [(c, row, jj) for c, jj in _split(kids, nr_args, row, j)]
        return chosen


def _possible_anchors(prep: _Prepared, is_cand: list[bool]) -> list[list[int]]:
    """``anc[v]``: the node indices that can be v's nearest repair point above (the source and
    the candidate ancestors), top first; a table's row is an index into this list."""
    anc: list[list[int]] = [[] for _ in range(prep.n)]
    for i in range(1, prep.n):
        p = prep.parent[i]
        anc[i] = anc[p] + [p] if (p == 0 or is_cand[p]) else anc[p]
    return anc


def _minplus_merge(tables: list[Any], kmax: int) -> tuple[Any, list[Any]]:
    """Min-plus merge along the budget axis (capped at ``kmax``); returns the result and,
    per step, the budget given to the newly merged table (argmin)."""
    import numpy as np

    acc = tables[0]
    args = []
    for b in tables[1:]:
        width = min(acc.shape[1] + b.shape[1] - 1, kmax + 1)
        out = np.full((acc.shape[0], width), math.inf)
        arg = np.zeros((acc.shape[0], width), dtype=np.int32)
        for x in range(min(b.shape[1], width)):
            m = min(acc.shape[1], width - x)
            cand = acc[:, :m] + b[:, x : x + 1]
            cur = out[:, x : x + m]
            better = cand < cur
            cur[better] = cand[better]
            arg[:, x : x + m][better] = x
        acc = out
        args.append(arg)
    return acc, args


def _split(kids: Sequence[int], args: list[Any], row: int, j: int) -> list[tuple[int, int]]:
    """Undo a sequential merge: the budget each child received."""
    out = []
    for t in range(len(kids) - 1, 0, -1):
        x = int(args[t - 1][row, j])
        out.append((kids[t], x))
        j -= x
    out.append((kids[0], j))
    return out


# ---------------------------------------------------------------- front ends


def _method(tree: Tree, convention: str, method: str, candidates) -> str:
    if method not in METHODS:
        raise ValueError(f"method = {method!r}: must be one of {', '.join(METHODS)}")
    if method != "auto":
        if method == "dp" and convention != "route":
            raise ValueError("method 'dp' is exact for the 'route' convention only; use 'exhaustive' or 'greedy'")
        return method
    if convention == "route":
        return "dp"
    r = len(tree.routers) if candidates is None else len(set(candidates))
    return "exhaustive" if 2**r <= EXHAUSTIVE_LIMIT else "greedy"


def tradeoff(
    tree: Tree | Mapping,
    *,
    convention: str = "route",
    method: str = "auto",
    candidates: Iterable[str] | None = None,
    rate_bps: float | None = None,
    serialization: bool = False,
    ks: Iterable[int] | None = None,
) -> list[Placement]:
    """The delay/buffer trade-off: the best placement found for each k = 0..R
    (or the sizes in ``ks``; with "dp" and more than 127 candidates, 128
    sizes spread over 0..R by default)."""
    t = validate(tree)
    cands = None if candidates is None else list(candidates)
    m = _method(t, convention, method, cands)
    kw: dict[str, Any] = dict(candidates=cands, rate_bps=rate_bps, serialization=serialization)
    if m == "dp":
        return optimal_dp(t, ks=_sizes(len(t.routers if cands is None else set(cands))) if ks is None else ks, **kw)
    curve = exhaustive(t, convention=convention, **kw) if m == "exhaustive" else greedy(t, convention=convention, **kw)
    if ks is not None:
        want = set(ks)
        curve = [p for p in curve if p.k in want]
    return curve


def place(
    tree: Tree | Mapping,
    *,
    routers: int | None = None,
    buffer_bytes: float | None = None,
    convention: str = "route",
    method: str = "auto",
    candidates: Iterable[str] | None = None,
    rate_bps: float | None = None,
    serialization: bool = False,
) -> Placement:
    """The placement with the lowest mean delay using at most ``routers``
    repair routers, or at most ``buffer_bytes`` of system-wide buffer
    (ties: the smaller buffer, then fewer routers)."""
    if (routers is None) == (buffer_bytes is None):
        raise ValueError("give exactly one budget: routers (k) or buffer_bytes")
    if routers is not None and (not isinstance(routers, int) or isinstance(routers, bool) or routers < 0):
        raise ValueError(f"routers = {routers!r}: must be a non-negative integer")
    if buffer_bytes is not None and not (buffer_bytes >= 0 and math.isfinite(buffer_bytes)):
        raise ValueError(f"buffer_bytes = {buffer_bytes!r}: must be a non-negative number")
    t = validate(tree)
    cands = None if candidates is None else list(candidates)
    m = _method(t, convention, method, cands)
    kw: dict[str, Any] = dict(candidates=cands, rate_bps=rate_bps, serialization=serialization)
    prep, ev = _evaluator(t, convention, rate_bps, serialization)
    base = ev([])
    if buffer_bytes is not None and base[2] > buffer_bytes * (1 + 1e-12):
        raise ValueError(
            f"no placement fits a buffer of {buffer_bytes / 1e6:.3f} MB: the source alone needs {base[2] / 1e6:.3f} MB"
        )
    pool: list[Placement]
    if m == "exhaustive":
        pool = exhaustive(t, routers=routers, buffer_bytes=buffer_bytes, convention=convention, **kw)
    elif buffer_bytes is None:
        if m == "dp":
            pool = optimal_dp(t, ks=[routers], routers=routers, **kw)
        else:
            pool = greedy(t, routers=routers, convention=convention, **kw)
    else:
        # Heuristic for a buffer budget: the greedy chains within the budget
        # (by gain and by gain per byte) and, for "route", the k-optimal family.
        pool = []
        seeds: list[tuple[str, list[int]]] = [("greedy", [])]
        allowed = set(_candidates(prep, cands))
        bnd = [prep.index[r] for r in boundary_routers(t) if prep.index[r] in allowed]
        if bnd and ev(bnd)[2] <= buffer_bytes * (1 + 1e-12):
            seeds.append(("boundaries+greedy", bnd))
        for label, start in seeds:
            for rank in ("gain", "ratio"):
                order = _greedy_order(prep, ev, convention, cands, None, buffer_bytes, rank, start)
                first = len(start)
                prefixes = [len(order)] if convention == "route" else range(first, len(order) + 1)
                pool += [_placement(prep, order[:k], ev(order[:k]), f"{label}-{rank}", convention) for k in prefixes]
        if m == "dp":
            pool += optimal_dp(t, ks=_sizes(len(_candidates(prep, cands)), most=33), **kw)
        pool = [p for p in pool if p.buffer_total_bytes <= buffer_bytes * (1 + 1e-12)]
    return min(pool, key=lambda p: (round(p.mean_delay_s, 15), p.buffer_total_bytes, p.k))


def _sizes(r: int, most: int = 128) -> list[int]:
    """All of 0..r when few, else about ``most`` sizes spread over 0..r."""
    if r + 1 <= most:
        return list(range(r + 1))
    return sorted({round(i * r / (most - 1)) for i in range(most)})


def boundary_routers(tree: Tree | Mapping, backbone_delay_s: float = 0.010) -> list[str]:
    """Routers at a backbone/local-network boundary: one network on each side
    of the class threshold. §2.1 characterizes backbones by tens of ms
    between neighbouring routers and local networks by a few ms; a network
    is "backbone" when its one-way delay is at least ``backbone_delay_s``.
    """
    t = validate(tree)
    out = []
    for r in t.routers:
        up = t.parent_net[r].delay_s >= backbone_delay_s
        if any((e.delay_s >= backbone_delay_s) != up for e in t.child_nets[r]):
            out.append(r)
    return out
