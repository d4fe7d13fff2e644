"""Measuring model parameters on a target: the rank programs and procedures
that produce a :class:`parcomm.models.PlogPParams` file.

Kept apart from :mod:`parcomm.models` (closed forms, no communicator): the
procedures here run rank programs through a *runner* (simulator, local TCP
processes, MPI), so they depend on :mod:`parcomm.comm`; the models only read
the numbers they write.

* :mod:`.procedure`: PlogP (Kielmann et al.) and PlogP-BR (seed 001 §3)
  parameters: L, g(m), o_s(m), o_r(m), g(m, C), the switch queue q.
* :mod:`.rto_probe`: PlogP-BR+'s expected RTO waits per call.
* :mod:`.stats`: repeat-until-tight stop rules.
"""

from .procedure import DEFAULT_SIZES, Runner, measure, sim_runner, stream_rate
from .rto_probe import probe_rto

__all__ = ["DEFAULT_SIZES", "Runner", "measure", "probe_rto", "sim_runner", "stream_rate"]
