"""One run of an mpi4py test file, as an ordinary mpi4py script.

``parcomm sim run run_suite.py -n N -- TEST_DIR MODULE OUT_PREFIX [SKIP_FILE]``
runs every test of mpi4py's ``TEST_DIR/MODULE.py`` in order on every rank
(collective tests need every rank in the same test) and appends one JSON line
per event to ``OUT_PREFIX.<rank>.jsonl``: ``{"start": id}`` before a test and
``{"id", "outcome", "detail"}`` after it, flushed at once, so a run that ends
early (a deadlock) still says which test it was in. Test ids listed in
SKIP_FILE (one per line) are not run. The file is not changed in any way.
"""

import json
import sys
import unittest

import greenlet
from mpi4py import MPI

test_dir, module_name, out_prefix = sys.argv[1:4]
skip = set()
if len(sys.argv) > 4:
    with open(sys.argv[4]) as f:
        skip = {line.strip() for line in f if line.strip()}

sys.path.insert(0, test_dir)
module = __import__(module_name)


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


tests = [t for t in flatten(unittest.defaultTestLoader.loadTestsFromModule(module)) if t.id() not in skip]
rank = MPI.COMM_WORLD.Get_rank()


class Outcome(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcome, self.detail = "pass", ""
        self.ended = False

    def addError(self, test, err):  # noqa: N802 - unittest's names
        if issubclass(err[0], greenlet.GreenletExit) or "greenlet is being finalized" in str(err[1]):
            self.ended = True  # the run is ending (another rank failed): this test did not finish
        self.outcome, self.detail = "error", self._text(err)

    def addFailure(self, test, err):  # noqa: N802
        self.outcome, self.detail = "fail", self._text(err)

    def addSkip(self, test, reason):  # noqa: N802
        self.outcome, self.detail = "skip", str(reason)

    def addExpectedFailure(self, test, err):  # noqa: N802
        self.outcome = "pass"

    def addUnexpectedSuccess(self, test):  # noqa: N802
        self.outcome = "fail"

    def addSubTest(self, test, subtest, err):  # noqa: N802
        if err is not None and self.outcome == "pass":
            failed = issubclass(err[0], test.failureException)
            self.outcome, self.detail = ("fail" if failed else "error"), self._text(err)

    @staticmethod
    def _text(err):
        import traceback

        exc = err[1]
        where = [f"{f.name}:{f.lineno}" for f in traceback.extract_tb(err[2]) if f.filename.startswith(test_dir)]
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        return f"{text} (at {where[-1]})" if where else text


with open(f"{out_prefix}.{rank}.jsonl", "a") as out:
    for test in tests:
        out.write(json.dumps({"start": test.id()}) + "\n")
        out.flush()
        result = Outcome()
        test.run(result)
        if result.ended:
            break
        out.write(json.dumps({"id": test.id(), "outcome": result.outcome, "detail": result.detail}) + "\n")
        out.flush()
