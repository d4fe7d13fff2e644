"""Algorithm selection: the fastest algorithm of a collective under a model."""

from __future__ import annotations

from typing import Protocol

from .base import Model, canonical, check_procs
from .hockney import Hockney
from .logp import LogGP, LogP
from .params import PlogPParams
from .plogp import PlogP
from .plogp_br import PlogPBR
from .plogp_br_plus import PlogPBRPlus


class _ModelClass(Protocol):
    """A model class: ``from_params`` fits it to measured PLogP parameters."""

    def from_params(self, p: PlogPParams) -> Model: ...


MODELS: dict[str, _ModelClass] = {
    "hockney": Hockney,
    "logp": LogP,
    "loggp": LogGP,
    "plogp": PlogP,
    "plogp-br": PlogPBR,
    "plogp-br+": PlogPBRPlus,
}
ALGORITHMS = {
    "alltoall": ["alltoall_a", "alltoall_b"],
    "bcast": ["bcast_binomial", "bcast_scatter_allgather"],
    "barrier": ["barrier"],
}


def make_model(name: str, params: PlogPParams) -> Model:
    try:
        cls = MODELS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None
    return cls.from_params(params)


def predict_all(
    collective: str, params: PlogPParams, procs: int, nbytes: float, model: str = "plogp-br"
) -> dict[str, float]:
    """Predicted time of every algorithm of ``collective`` (e.g. "alltoall")."""
    if collective not in ALGORITHMS:
        raise ValueError(f"unknown collective {collective!r}; known: {', '.join(ALGORITHMS)}")
    mdl = make_model(model, params)
    out = {}
    for algo in ALGORITHMS[collective]:
        check_procs(canonical(algo), procs)
        out[algo] = mdl.predict(algo, procs, nbytes)
    return out


def select(
    collective: str, params: PlogPParams, procs: int, nbytes: float, model: str = "plogp-br"
) -> tuple[str, dict[str, float]]:
    """The fastest algorithm and the predicted times of all of them."""
    times = predict_all(collective, params, procs, nbytes, model)
    return min(times, key=times.__getitem__), times
