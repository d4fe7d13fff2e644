"""How an object is cut into pieces and works, and who fetches which works first.

Seed 004 (Chiba et al.) §4.2-4.3: the object is split into logical *pieces*
(32 KB in the paper), the unit of verification and of peer exchange; pieces
are grouped into *works* (100 pieces in the paper), the unit of storage
fetching and of stealing. The last piece and the last work may be short.

Our defaults are coarser than the paper's: 1 MiB pieces and 8 pieces (8 MiB)
per work. A work is fetched with one ranged GET; S3 range requests are
dominated by request overhead (first-byte latency, tens of ms) below ~1 MB,
while an 8 MiB GET at the paper's 4-10 MB/s per connection takes about a
second, so the overhead stays at a few per cent. The paper's layout is
``Layout(size, PAPER_PIECE_SIZE, PAPER_WORK_PIECES)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

PAPER_PIECE_SIZE = 32 * 1024  # §4.2
PAPER_WORK_PIECES = 100  # §4.3
DEFAULT_PIECE_SIZE = 1 << 20
DEFAULT_WORK_PIECES = 8


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Layout:
    """Pieces and works of an object of ``size`` bytes (all indices 0-based)."""

    size: int
    piece_size: int = DEFAULT_PIECE_SIZE
    work_pieces: int = DEFAULT_WORK_PIECES

    def __post_init__(self) -> None:
        for name in ("size", "piece_size", "work_pieces"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"Layout.{name} must be an int, got {value!r}")
        if self.size < 0:
            raise ValueError(f"Layout.size must be >= 0, got {self.size}")
        if self.piece_size <= 0:
            raise ValueError(f"Layout.piece_size must be > 0, got {self.piece_size}")
        if self.work_pieces <= 0:
            raise ValueError(f"Layout.work_pieces must be > 0, got {self.work_pieces}")

    @cached_property
    def pieces(self) -> int:
        return _ceil_div(self.size, self.piece_size)

    @cached_property
    def works(self) -> int:
        return _ceil_div(self.pieces, self.work_pieces)

    @property
    def work_size(self) -> int:
        return self.piece_size * self.work_pieces

    def piece_bytes(self, piece: int) -> tuple[int, int]:
        """Byte range ``[start, end)`` of a piece."""
        self._check(piece, self.pieces, "piece")
        start = piece * self.piece_size
        return start, min(start + self.piece_size, self.size)

    def piece_length(self, piece: int) -> int:
        if 0 <= piece < self.pieces - 1:
            return self.piece_size  # the hot path: every piece but the last is full
        start, end = self.piece_bytes(piece)
        return end - start

    def work_pieces_of(self, work: int) -> range:
        """Pieces of a work, in order."""
        self._check(work, self.works, "work")
        first = work * self.work_pieces
        return range(first, min(first + self.work_pieces, self.pieces))

    def work_bytes(self, work: int) -> tuple[int, int]:
        pieces = self.work_pieces_of(work)
        return self.span_bytes(pieces[0], pieces[-1])

    def span_bytes(self, first_piece: int, last_piece: int) -> tuple[int, int]:
        """Byte range ``[start, end)`` of pieces ``first..last`` (inclusive)."""
        if first_piece > last_piece:
            raise ValueError(f"empty piece span {first_piece}..{last_piece}")
        return self.piece_bytes(first_piece)[0], self.piece_bytes(last_piece)[1]

    def work_of(self, piece: int) -> int:
        self._check(piece, self.pieces, "piece")
        return piece // self.work_pieces

    def initial_works(self, rank: int, nranks: int) -> range:
        """Works first assigned to ``rank``: §4.2's ``(iP/N, (i+1)P/N - 1)``
        applied to works (so a stolen unit is never split), floors of the
        exact fractions; every work belongs to exactly one rank."""
        if nranks <= 0 or not 0 <= rank < nranks:
            raise ValueError(f"rank {rank} out of range for {nranks} ranks")
        return range(rank * self.works // nranks, (rank + 1) * self.works // nranks)

    @staticmethod
    def _check(index: int, count: int, what: str) -> None:
        if not 0 <= index < count:
            raise IndexError(f"{what} {index} out of range (0..{count - 1})")
