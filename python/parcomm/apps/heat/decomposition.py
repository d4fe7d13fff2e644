"""Cutting the N x N grid into M x M tasks (seed 002 Fig. 2) and placing tasks on hosts.

Task ``rank`` sits at row ``rank // M``, column ``rank % M`` of the task grid
and owns the ``N/M x N/M`` block of points starting at ``(row * N/M, col * N/M)``.
Its neighbours are the tasks above, below, left and right (none beyond the
domain's edge, where the boundary temperature is fixed at 0).

Placement maps tasks to hosts of the seed-002 platform (hosts numbered
segment by segment, :func:`parcomm.platform.segments.segments_router`):

* ``linear``: task i on host i (consecutive tasks fill a segment, then the next);
* ``round_robin``: task i on segment i mod S, as a spawner that deals tasks
  out over the machine list might do (PVM 3.3 placed tasks by its own host
  table; §5.3 says the paper left it to PVM);
* ``blocks``: recursive coordinate bisection of the task grid into S compact
  blocks of neighbouring tasks, one block per segment, so most boundary
  messages stay inside a segment.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Decomposition", "PLACEMENTS", "place", "placement_stats", "segment_groups"]

PLACEMENTS = ("linear", "round_robin", "blocks")

# Neighbour directions and the tags of the messages that travel in them.
UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3


@dataclass(frozen=True)
class Decomposition:
    N: int
    M: int

    def __post_init__(self):
        if not isinstance(self.N, int) or not isinstance(self.M, int) or self.N < 1 or self.M < 1:
            raise ValueError(f"N and M must be positive integers, got N={self.N!r}, M={self.M!r}")
        if self.N % self.M:
            raise ValueError(f"M = {self.M} must divide N = {self.N} (each task gets an N/M x N/M block)")
        if self.N // self.M < 2:
            raise ValueError(f"N/M = {self.N // self.M}: each task needs at least 2x2 points")

    @property
    def tasks(self) -> int:
        return self.M * self.M

    @property
    def n(self) -> int:
        """Points per side of one task."""
        return self.N // self.M

    def coords(self, rank: int) -> tuple[int, int]:
        return divmod(rank, self.M)

    def rank_of(self, row: int, col: int) -> int | None:
        if 0 <= row < self.M and 0 <= col < self.M:
            return row * self.M + col
        return None

    def neighbours(self, rank: int) -> dict[int, int]:
        """Direction (UP, DOWN, LEFT, RIGHT) -> neighbour rank, for those that exist."""
        i, j = self.coords(rank)
        cand = {
            UP: self.rank_of(i - 1, j),
            DOWN: self.rank_of(i + 1, j),
            LEFT: self.rank_of(i, j - 1),
            RIGHT: self.rank_of(i, j + 1),
        }
        return {d: r for d, r in cand.items() if r is not None}

    def block(self, rank: int) -> tuple[slice, slice]:
        """The task's points in the global (unpadded) N x N grid."""
        i, j = self.coords(rank)
        n = self.n
        return slice(i * n, (i + 1) * n), slice(j * n, (j + 1) * n)

    def edges(self) -> list[tuple[int, int]]:
        """Neighbouring task pairs (each once)."""
        out = []
        for r in range(self.tasks):
            for d, q in self.neighbours(r).items():
                if d in (DOWN, RIGHT):
                    out.append((r, q))
        return out


def _bisect(cells: list[tuple[int, int]], parts: list[int]) -> list[list[tuple[int, int]]]:
    """Split ``cells`` into len(parts) groups of sizes proportional to ``parts``
    (segment capacities), cutting across the longer extent each time."""
    if len(parts) == 1:
        return [cells]
    half = len(parts) // 2
    left_cap, total_cap = sum(parts[:half]), sum(parts)
    rows = [c[0] for c in cells]
    cols = [c[1] for c in cells]
    axis = 0 if max(rows) - min(rows) >= max(cols) - min(cols) else 1
    ordered = sorted(cells, key=lambda c: (c[axis], c[1 - axis]))
    k = round(len(cells) * left_cap / total_cap)
    k = max(len(cells) - sum(parts[half:]), min(k, left_cap))
    return _bisect(ordered[:k], parts[:half]) + _bisect(ordered[k:], parts[half:])


def segment_groups(platform: dict) -> list[list[int]]:
    """Host indices of each shared segment of a platform dict, in order; a
    platform without segments is one group of all hosts."""
    index = {h["name"]: i for i, h in enumerate(platform["hosts"])}
    groups = [[index[m] for m in seg["members"] if m in index] for seg in platform.get("segments", [])]
    groups = [g for g in groups if g]
    return groups or [list(range(len(index)))]


def place(decomp: Decomposition, groups: list[list[int]], how: str = "linear") -> list[int]:
    """Host index of every task; ``groups`` lists the host indices of each
    segment (:func:`segment_groups`)."""
    segment_sizes = [len(g) for g in groups]
    if how not in PLACEMENTS:
        raise ValueError(f"unknown placement {how!r}; known: {', '.join(PLACEMENTS)}")
    n_tasks = decomp.tasks
    if n_tasks > sum(segment_sizes):
        raise ValueError(f"{n_tasks} tasks need {n_tasks} hosts; the platform has {sum(segment_sizes)}")
    if how == "linear":
        return sorted(h for g in groups for h in g)[:n_tasks]
    hosts = [0] * n_tasks
    if how == "round_robin":
        used = [0] * len(segment_sizes)
        s = 0
        for t in range(n_tasks):
            while used[s] >= segment_sizes[s]:
                s = (s + 1) % len(segment_sizes)
            hosts[t] = groups[s][used[s]]
            used[s] += 1
            s = (s + 1) % len(segment_sizes)
        return hosts
    cells = [decomp.coords(t) for t in range(n_tasks)]
    blocks = _bisect(cells, list(segment_sizes))
    for s, group in enumerate(blocks):
        for k, (i, j) in enumerate(sorted(group)):
            hosts[decomp.rank_of(i, j)] = groups[s][k]
    return hosts


def placement_stats(decomp: Decomposition, hosts: list[int], groups: list[list[int]]) -> dict:
    """Messages per step that cross the router, and the busiest segment's
    message count (sent or received by its hosts, both directions of each edge)."""
    seg_of_host = {h: s for s, g in enumerate(groups) for h in g}
    seg = [seg_of_host[h] for h in hosts]
    per_seg = [0] * len(groups)
    crossing = 0
    for a, b in decomp.edges():
        sa, sb = seg[a], seg[b]
        if sa != sb:
            crossing += 2
            per_seg[sa] += 2  # a's message out, b's message in: both on a's bus
            per_seg[sb] += 2
        else:
            per_seg[sa] += 2
    return {
        "messages_per_step": 2 * len(decomp.edges()),
        "crossing_router": crossing,
        "busiest_segment_messages": max(per_seg),
        "segments_used": len(set(seg)),
    }
