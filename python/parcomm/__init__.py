"""parcomm: model, simulate, emulate and run communication in parallel systems.

The layers, bottom up (docs/architecture.md): ``parcomm._core`` (the Rust
packet-level simulator and the platform schema), ``strictjson``; ``auth``
(job membership) and ``platform`` (topologies as data); ``result`` (one result
type for the four ways); ``models`` (closed forms); ``comm`` (one async
Communicator, backends sim/MPI/socket); ``collectives`` (rank programs written
once); ``measure``; ``emu`` (real Linux TCP in namespaces); ``apps`` (hpa,
heat, bcast, mcast); ``studies`` (the seed papers); ``conformance``; ``cli``.
"""

__version__ = "0.1.0"


def _check_core() -> None:
    # A compiled module from another build silently gives wrong answers;
    # refuse it (as polars does) with a message that says how to fix it.
    from . import _core

    if _core.__version__ != __version__:
        raise ImportError(
            f"parcomm {__version__} found its compiled core at version {_core.__version__}; "
            "rebuild it with `pip install -e .`"
        )


_check_core()

# The composition root: parcomm.collectives registers the algorithms behind the Communicator's
# collective methods with parcomm.comm (a layer below it, which never imports it).
from . import collectives  # noqa: E402,F401
