"""mpi4py's blocking surface over parcomm's one Communicator.

``parcomm sim run prog.py`` (and ``emu run``, ``run local``) run an
unmodified ``from mpi4py import MPI`` script: each rank's code runs in a
greenlet whose blocking calls are served by the async engine
(:mod:`.bridge`); ``mpi4py.MPI`` resolves to :mod:`.MPI` inside the run
(:mod:`.script`). Under ``run mpi`` a script gets the real mpi4py.
"""

from .script import is_script_ref, mpi4py_installed, script_program

__all__ = ["is_script_ref", "mpi4py_installed", "script_program"]
