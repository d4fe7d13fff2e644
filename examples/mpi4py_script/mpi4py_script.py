"""An unmodified mpi4py program (ring.py) on a simulated 4-host star.

`parcomm sim run ring.py -n 4 --platform star:4` runs it as `mpiexec -n 4
python ring.py` would, except that the network and MPI.Wtime() are
simulated: the output is the same on every run. The same command with
`emu run`, `run local` or `run mpi` runs it on real TCP or real MPI.
"""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

run = subprocess.run(
    [sys.executable, "-m", "parcomm", "sim", "run", "ring.py", "-n", "4", "--platform", "star:4"],
    cwd=HERE,
    capture_output=True,
    text=True,
    check=True,
)
print(run.stdout, end="")  # the program's own output; the result table went to stderr
