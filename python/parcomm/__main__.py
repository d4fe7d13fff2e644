import sys

from .cli import main

# Guarded: MPI pool workers (repro --executor mpi) import the main module without running it.
if __name__ == "__main__":
    sys.exit(main())
