"""The Mondrian method: configuration, encoding, the partition step
(:mod:`anonkit.algorithms.mondrian`), generalization, verification and measurement."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from anonkit._util.numbers import whole_number
from anonkit.algorithms import mondrian as algorithm
from anonkit.algorithms.population_cuts import (
    PopulationCodes,
    encode_population,
    single_population,
)
from anonkit.assemble import Progress, generalized_release, no_progress
from anonkit.checker import survey_weights
from anonkit.data.encoding import EncodedTable, encode
from anonkit.data.schema import Kind, Schema
from anonkit.errors import InputError
from anonkit.generalization import Form, default_form, validate_form
from anonkit.hierarchy.base import Hierarchy
from anonkit.methods.models import models_from_options
from anonkit.metrics import measure_generalized
from anonkit.models.base import KAnonymity, PrivacyModel, SensitiveAttribute, bind_models
from anonkit.models.risk import with_population_hierarchies
from anonkit.models.text import parse_model
from anonkit.partition import Partition
from anonkit.release import Release


class Mondrian:
    """Strict multidimensional Mondrian with privacy models as cut constraints.

    Args:
        k: minimum class size (k-anonymity). Optional when ``models`` includes it.
        models: further privacy models, as objects or strings (``"l=3"``, ``"t=0.2"``, see
            :func:`anonkit.checker.parse_model`); every cut must keep all of them.
        strategy: how to choose the cut dimension: ``"widest"`` (normalised range, the
            paper's choice), ``"entropy"``, ``"distinct"`` (most distinct values) or
            ``"random"`` (drawn from the operating system's entropy, or from ``seed``).
        generalization: per QI, the released form (``range``, ``set``, ``hierarchy``,
            ``prefix``, ``mean``, ``median``); default: hierarchy when one is given, range
            for ordered columns, set for categorical ones.
        remove_cut_dimension: the spec's variant: a dimension once cut is not cut again below.
        single_dimensional: the spec's variant: stop after the first cut.
        allow_missing: treat a missing QI value as a value of its own instead of refusing.
        seed: for ``strategy="random"``, in tests and studies only (the release then says
            it was seeded; the seed is never recorded).
    """

    method = "mondrian"

    def __init__(
        self,
        k: int | None = None,
        models: Sequence[PrivacyModel | str] = (),
        strategy: str = "widest",
        generalization: Mapping[str, Form | str] | None = None,
        remove_cut_dimension: bool = False,
        single_dimensional: bool = False,
        allow_missing: bool = False,
        seed: int | None = None,
    ) -> None:
        # checked here, as -k is on the command line: a k of 5.0 or '5' is refused, never
        # recorded as given
        self.k = None if k is None else whole_number("k", k, "python", 1)
        self.models = models
        self.strategy = strategy
        self.generalization = generalization
        self.remove_cut_dimension = remove_cut_dimension
        self.single_dimensional = single_dimensional
        self.allow_missing = allow_missing
        self.seed = None if seed is None else whole_number("seed", seed, "python", 0)

    # -- configuration checked at run time (scikit-learn style) --------------------------
    def resolved_models(self, sensitive: Sequence[SensitiveAttribute]) -> list[PrivacyModel]:
        """The configured models, each bound to the sensitive attribute(s) it concerns."""
        models: list[PrivacyModel] = []
        if self.k is not None:
            models.append(KAnonymity(self.k))
        names = [a.name for a in sensitive]
        for m in self.models:
            if isinstance(m, str):
                m = parse_model(m, sensitive=names[0] if len(names) == 1 else None)
            models.append(m)
        if not models:
            raise InputError("no privacy model given: set k (e.g. -k 5) or models")
        return bind_models(models, sensitive)

    def parameters(self) -> dict[str, object]:
        return {
            "k": self.k,
            "models": [m if isinstance(m, str) else m.spec() for m in self.models],
            "strategy": self.strategy,
            "generalization": dict(self.generalization or {}),
            "remove_cut_dimension": self.remove_cut_dimension,
            "single_dimensional": self.single_dimensional,
            "allow_missing": self.allow_missing,
        }

    # -- the public entry point ----------------------------------------------------------
    def anonymize(
        self,
        df: pd.DataFrame,
        quasi_identifiers: Sequence[str] | None = None,
        sensitive: Sequence[str] | str | None = None,
        identifiers: Sequence[str] = (),
        hierarchies: Mapping[str, Hierarchy] | None = None,
        kinds: Mapping[str, Kind | str] | None = None,
        schema: Schema | None = None,
        progress: Progress | None = None,
        insensitive: Sequence[str] | str = (),
    ) -> Release:
        """Anonymize ``df`` (not modified) and verify the release; see :class:`Mondrian`.
        Every column needs a role: ``insensitive`` names those released unchanged (``"*"``:
        all the others); an unnamed column is an error, never released raw.
        ``progress`` is told each step as it runs (see :data:`anonkit.assemble.Progress`)."""
        step = progress or no_progress
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        with step("encoding", len(df)):
            if schema is None:
                if quasi_identifiers is None:
                    raise InputError("name the quasi-identifiers (--qi a,b,c)")
                schema = Schema.from_roles(df, quasi_identifiers, sensitive, identifiers,
                                           kinds=kinds, hierarchies=hierarchies,
                                           insensitive=insensitive)
            table = encode(df, schema, allow_missing=self.allow_missing)
            models = self.resolved_models(
                [SensitiveAttribute.from_encoded(c) for c in table.sensitive])
            # the risk models' population tables read the QIs' hierarchy labels
            models = with_population_hierarchies(
                models, {c.name: c.hierarchy for c in table.quasi_identifiers
                         if c.hierarchy is not None})
            weights = survey_weights(df, models)
            forms = self.forms(table)
            # k-map and δ-presence against a population table become cut constraints
            # when the forms' labels cover population rows by hull
            people = single_population(models)
            population = None if people is None else encode_population(table, people, forms)
        timings["encode"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        with step("partitioning", len(df)):
            partition = self.partition(table, models, weights=weights,
                                       population=population)
        timings["algorithm"] = time.perf_counter() - t0

        params = self.parameters() | {
            "quasi_identifiers": schema.quasi_identifiers,
            "sensitive": schema.sensitive,
            "forms": {name: form.value for name, form in forms.items()},
        }
        release, generalized = generalized_release(df, table, partition, forms, models,
                                                   method=self.method, parameters=params,
                                                   timings=timings, progress=progress)
        measure_generalized(release, generalized, partition.sizes)
        release.seeded = self.seed is not None and self.strategy == "random"
        return release

    def forms(self, table: EncodedTable) -> dict[str, Form]:
        given = dict(self.generalization or {})
        qi_names = [c.name for c in table.quasi_identifiers]
        for name in given:
            if name not in qi_names:
                raise InputError(f"a generalization is given for {name!r}, which is not a "
                                 f"quasi-identifier ({', '.join(qi_names)})")
        return {c.name: validate_form(c, given[c.name]) if c.name in given else default_form(c)
                for c in table.quasi_identifiers}

    def partition(self, table: EncodedTable, models: Sequence[PrivacyModel],
                  reference_counts: Mapping[str, np.ndarray] | None = None,
                  weights: np.ndarray | None = None,
                  population: PopulationCodes | None = None) -> Partition:
        """The partition step with this configuration (see
        :func:`anonkit.algorithms.mondrian.partition`)."""
        # the random strategy's draws come from the operating system unless a seed is
        # given (tests and studies); the seed is never recorded
        seed = self.seed if self.seed is not None else secrets.randbits(31)
        return algorithm.partition(table, models, strategy=self.strategy, seed=seed,
                                   remove_cut_dimension=self.remove_cut_dimension,
                                   single_dimensional=self.single_dimensional,
                                   reference_counts=reference_counts, weights=weights,
                                   population=population)


def run(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
        progress: Progress | None = None) -> Release:
    """The ``mondrian`` method of the registry: :class:`Mondrian` with the typed options."""
    settings = {name: options[name] for name in ("strategy", "generalization",
                                                  "remove_cut_dimension",
                                                  "single_dimensional", "allow_missing",
                                                  "seed") if options.get(name) is not None}
    return Mondrian(models=models_from_options(options), **settings).anonymize(
        df, schema=schema, progress=progress)
