"""Closed-form models: the "model" way of answering.

Point-to-point and collective models (one module each, one interface:
``model.predict(collective, procs, nbytes) -> seconds``): Hockney, LogP,
LogGP, PlogP, PlogP-BR (seed 001) and PlogP-BR+ (PlogP-BR with a measured RTO
term), all built from one measured parameter set (:mod:`.params`, produced
by :mod:`parcomm.measure`). Algorithm selection is in
:mod:`.selection`. Other models (multicast, stencil, broadcast bounds) live
beside them.
"""

from .hockney import Hockney
from .logp import LogGP, LogP
from .multicast import MulticastResult
from .multicast import analyze as analyze_multicast
from .params import PlogPParams
from .plogp import PlogP
from .plogp_br import PlogPBR, rto_penalty_count
from .plogp_br_plus import PlogPBRPlus
from .selection import MODELS, make_model, predict_all, select
from .stencil import StencilModel
from .stencil import implied_parameters as stencil_implied_parameters

__all__ = [
    "MODELS",
    "Hockney",
    "LogGP",
    "LogP",
    "MulticastResult",
    "PlogP",
    "PlogPBR",
    "PlogPBRPlus",
    "PlogPParams",
    "StencilModel",
    "analyze_multicast",
    "make_model",
    "predict_all",
    "rto_penalty_count",
    "select",
    "stencil_implied_parameters",
]
