"""MPI message matching as a sans-IO state machine (no clocks, no I/O).

Arrived messages wait in an *unexpected* queue until a receive matches them;
posted receives wait in a *posted* queue until a message matches them. Both
are searched in order, which with per-pair FIFO delivery gives MPI's
non-overtaking rule. Every backend that does its own matching uses this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .base import ANY_SOURCE, ANY_TAG, RESERVED_TAG_BASE


@dataclass
class Envelope:
    source: int
    tag: int
    nbytes: int
    payload: Any = None
    # Backend data (e.g. the rendezvous handle of a ready-to-send).
    handle: Any = None
    # Communicator context (0: the world; sub-communicators have their own).
    ctx: int = 0


@dataclass
class PostedRecv:
    source: int
    tag: int
    handle: Any = None
    ctx: int = 0


def matches(recv: PostedRecv, env: Envelope) -> bool:
    """MPI's rule; ``ANY_TAG`` matches user tags only, never the reserved tags
    of collectives (MPI gives collectives a context of their own)."""
    if recv.ctx != env.ctx or (recv.source != ANY_SOURCE and recv.source != env.source):
        return False
    return recv.tag == env.tag or (recv.tag == ANY_TAG and env.tag < RESERVED_TAG_BASE)


@dataclass
class Matcher:
    unexpected: list[Envelope] = field(default_factory=list)
    posted: list[PostedRecv] = field(default_factory=list)

    def arrive(self, env: Envelope) -> PostedRecv | None:
        """A message arrived: return the receive it completes, or queue it."""
        for i, recv in enumerate(self.posted):
            if matches(recv, env):
                return self.posted.pop(i)
        self.unexpected.append(env)
        return None

    def post(self, recv: PostedRecv) -> Envelope | None:
        """A receive was posted: return the message it takes, or queue it."""
        for i, env in enumerate(self.unexpected):
            if matches(recv, env):
                return self.unexpected.pop(i)
        self.posted.append(recv)
        return None
