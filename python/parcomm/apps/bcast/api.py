"""``parcomm bcast`` as a library call: deliver an S3 object into memory.

    >>> import numpy as np                                    # doctest: +SKIP
    >>> from parcomm.apps.bcast.api import broadcast_into, object_size
    >>> buf = np.empty(object_size("s3://data/weights.bin"), dtype=np.uint8)
    >>> report = broadcast_into(buf, "s3://data/weights.bin", comm=MPI.COMM_WORLD)

Every rank of ``comm`` (an mpi4py communicator) gets the object into its own
buffer, fetching 1/N from storage and the rest from the other ranks, with the
same verification as the command line: every piece against the hash list
(and with ``verify="whole"`` the whole object against its sha256 too)
before the call returns. Nothing is written to disk. Without ``comm`` this
process alone fetches the object.
"""

from __future__ import annotations

from .launch import Job
from .node import BcastConfig
from .real import NodeReport
from .s3 import S3Client, S3Config


def object_size(url: str, s3: S3Config | None = None) -> int:
    """The object's size in bytes (one HEAD request), to size the buffer."""
    return S3Client(s3 or S3Config.from_env()).head(url).size


def broadcast_into(
    buffer,
    url: str,
    *,
    comm=None,
    s3: S3Config | None = None,
    config: BcastConfig | None = None,
    algo: str = "steal",
    timeout: float = 3600.0,
    bind: str = "127.0.0.1",
    advertise: str | None = None,
    manifest_url: str | None = None,
    verify: str = "pieces",
) -> NodeReport:
    """Fill ``buffer`` (writable, contiguous, exactly the object's size) with the
    object at ``url``, verified; returns this node's report.

    Raises :class:`~.real.BcastError` if the broadcast failed on this node,
    :class:`~.output.OutputError` if ``buffer`` does not fit the object, and
    :class:`~.s3.S3Error` subclasses for the object and the credentials. With
    ``comm`` spanning hosts, give ``bind``/``advertise`` an address the other
    ranks can reach (the default binds loopback: ranks on this host only).
    ``manifest_url`` is where the hash list is when it is not the sidecar next to
    the object (``s3://...`` or a file every rank can read). ``verify`` is
    ``"pieces"`` (every piece's sha256: one pass per byte; the hash list, made in
    one pass over the object, vouches for the whole through its pieces) or
    ``"whole"`` (and the whole object's, in order: a second pass).
    """
    from .launch import run_one

    job = Job(
        url,
        "<buffer>",
        algo,
        config or BcastConfig(),
        s3 or S3Config.from_env(),
        timeout=timeout,
        manifest_url=manifest_url,
        verify=verify,
    )
    if comm is None:
        return run_one(job, rank=0, nodes=1, bind=bind, advertise=advertise, out=buffer)
    return run_one(job, comm=comm, bind=bind, advertise=advertise, out=buffer)
