"""The sequential engines, and how ``publish`` finds the engine of a method.

A sequential method (``methods.get(name).sequential``) continues from the earlier releases
with its engine here; a one-shot method publishes by running its ``anonymize`` alone (the
history's gate then judges the result). The registry of methods (:mod:`anonkit.methods`)
declares the options of both and never imports this package.
"""

from __future__ import annotations

import pandas as pd

from anonkit import methods
from anonkit.errors import InputError
from anonkit.history.engines import incremental_ke, minvariance, stream_tree
from anonkit.history.engines.context import Engine, PublishContext, PublishRequest
from anonkit.methods import Method
from anonkit.release import Release

_ENGINES: dict[str, Engine] = {
    "ke": incremental_ke.publish,
    "m-invariance": minvariance.publish,
    "stream-tree": stream_tree.publish,
}


def register_engine(name: str, engine: Engine, *, replace: bool = False) -> None:
    """Make ``engine`` available as ``anonkit release publish --method NAME``: a method with
    untyped Python options, e.g. a test method (built-in methods declare typed options in
    :mod:`anonkit.methods`).

    ``engine(df, request, context)`` returns a :class:`Release`; the publishing boundary
    verifies it (:func:`anonkit.verify.verify_release`) before anything is written.
    """
    if name in methods.names() and not replace:
        raise ValueError(f"a release method named {name!r} is already registered")
    methods.register(Method(name, "a method registered from Python", "generalized",
                            sequential=True, threat_model="one-shot", typed=False),
                     replace=True)
    _ENGINES[name] = engine


def _one_shot(method: Method) -> Engine:
    def publish(df: pd.DataFrame, request: PublishRequest, context: PublishContext
                ) -> Release:
        assert method.anonymize is not None
        return method.anonymize(df, context.schema, dict(request.options), None)

    return publish


def engine_for(name: str) -> Engine:
    """The publishing step of method ``name``."""
    try:
        method = methods.get(name)
    except InputError:
        raise InputError(f"unknown release method {name!r}; registered methods: "
                         f"{', '.join(methods.names())}") from None
    if name in _ENGINES:
        return _ENGINES[name]
    if method.anonymize is None:
        raise InputError(f"method {name!r} cannot publish with a history")
    return _one_shot(method)


def sequential_without_engine() -> list[str]:
    """Sequential methods of the registry that have no engine here (the contract test
    asserts there are none)."""
    return [m.name for m in methods.methods() if m.sequential and m.name not in _ENGINES]


__all__ = ["Engine", "PublishContext", "PublishRequest", "engine_for", "register_engine",
           "sequential_without_engine"]
