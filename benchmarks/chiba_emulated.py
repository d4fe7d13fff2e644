"""The emulated half of study ``chiba`` on its own (root, ip netns): Figs.
2/9/10 and 11 with real ``parcomm bcast`` processes in namespaces. Writes
``benchmarks/results/chiba_emulated.json``. About 10 minutes on 2 cores.

    python3 benchmarks/chiba_emulated.py
"""

import json
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from parcomm.studies.chiba_emu import EmuPlan, emulated_section
from parcomm.studies.framework import StudyContext, StudyReport

started = time.time()
with TemporaryDirectory() as tmp:
    ctx = StudyContext(Path(tmp), quick=False, seed=1, progress=lambda m: print(m, flush=True))
    rep = StudyReport("chiba", "emulated half", "seed 004")
    emulated_section(ctx, rep, EmuPlan())
out = {
    "plan": EmuPlan().__dict__,
    "tables": rep.tables,
    "comparisons": [c.__dict__ for c in rep.comparisons],
    "notes": rep.notes,
    "wall_s": time.time() - started,
}
path = Path(__file__).parent / "results" / "chiba_emulated.json"
path.write_text(json.dumps(out, indent=1, default=str))
print(f"wrote {path}")
