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

#: The composition root: parcomm.collectives registers the algorithms behind the Communicator's
#: collective methods with parcomm.comm (a layer below it, which never imports it). It is named
#: here, not imported: parcomm.comm loads it the first time a collective is called, so that a
#: process that only simulates a platform does not pay for the Communicator stack at import
#: (it was most of `import parcomm`).
COLLECTIVES_MODULE = "parcomm.collectives"
# mpi4py scripts run on the blocking surface, which sits above comm: comm reaches it through the root
BLOCKING_SCRIPT_MODULE = "parcomm.blocking.script"
BLOCKING_BUFFERS_MODULE = "parcomm.blocking.buffers"

#: Subpackages reachable as attributes of ``parcomm`` (imported on first use).
_SUBPACKAGES = frozenset(
    {"apps", "auth", "blocking", "cli", "collectives", "comm", "conformance", "emu", "measure", "models", "platform"}
    | {"result", "strictjson", "studies"}
)


def __getattr__(name: str) -> object:
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
