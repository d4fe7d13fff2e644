"""``MPI.Group``: an ordered set of ranks of the job (by their COMM_WORLD ranks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .status import UNDEFINED

__all__ = ["Group", "GROUP_EMPTY"]


class Group:
    """mpi4py's ``MPI.Group`` (translation, inclusion, set operations)."""

    def __init__(self, ranks: Sequence[int]):
        self._ranks = [int(r) for r in ranks]

    def Get_size(self) -> int:  # noqa: N802
        return len(self._ranks)

    def Get_rank(self) -> int:  # noqa: N802
        from .bridge import current

        me = current().comm.rank
        return self._ranks.index(me) if me in self._ranks else UNDEFINED

    size = property(Get_size)
    rank = property(Get_rank)

    def Incl(self, ranks: Sequence[int]) -> Group:  # noqa: N802
        return Group([self._ranks[r] for r in ranks])

    def Excl(self, ranks: Sequence[int]) -> Group:  # noqa: N802
        drop = set(ranks)
        return Group([w for i, w in enumerate(self._ranks) if i not in drop])

    def Translate_ranks(self, ranks: Sequence[int] | None = None, group: Group | None = None) -> list[int]:  # noqa: N802
        ranks = range(len(self._ranks)) if ranks is None else ranks
        out = []
        for r in ranks:
            w = self._ranks[r]
            out.append(
                group._ranks.index(w)
                if group is not None and w in group._ranks
                else (w if group is None else UNDEFINED)
            )
        return out

    @classmethod
    def Union(cls, a: Group, b: Group) -> Group:  # noqa: N802
        return Group(a._ranks + [w for w in b._ranks if w not in a._ranks])

    @classmethod
    def Intersection(cls, a: Group, b: Group) -> Group:  # noqa: N802
        return Group([w for w in a._ranks if w in b._ranks])

    @classmethod
    def Difference(cls, a: Group, b: Group) -> Group:  # noqa: N802
        return Group([w for w in a._ranks if w not in b._ranks])

    def Compare(self, other: Group) -> int:  # noqa: N802
        if self._ranks == other._ranks:
            return 0
        return 2 if sorted(self._ranks) == sorted(other._ranks) else 3

    def Free(self) -> None:  # noqa: N802
        """It becomes MPI.GROUP_NULL (no ranks)."""
        self._ranks = []

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Group) and self._ranks == other._ranks

    def __hash__(self) -> int:
        return hash(tuple(self._ranks))


GROUP_EMPTY = Group([])
