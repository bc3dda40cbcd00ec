"""Re-identification risk of any table, raw or released, ours or another tool's, as
statistical offices measure it, in one report: sample uniques, population uniqueness estimated
from the sampling fraction (:mod:`anonkit.models.population_estimates`), special uniques
(:mod:`anonkit.metrics.suda`), and individual, global and household risk from survey weights
(:mod:`anonkit.models.individual_estimates`). Records are named by their row numbers (0 = the first
data row), never by their values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonkit._util.grouping import group_rows
from anonkit._util.numbers import json_number
from anonkit._util.options import as_list
from anonkit.errors import InputError
from anonkit.metrics.suda import Suda2Result, suda2
from anonkit.models.individual_estimates import IndividualRisk, household_risk, individual_risk
from anonkit.models.population_estimates import MODELS, PopulationUniqueness, population_uniqueness

#: the highest-risk records a report lists
RISKIEST = 10


@dataclass
class RiskReport:
    """What :func:`risk` measured. ``population``: per estimator (Pitman, Zayatz, SNB and
    Dankar's rule), when a sampling fraction or population size was given; ``individual``
    and ``household``: when weights (and households) were given."""

    rows: int
    classes: int
    quasi_identifiers: list[str]
    in_classes_of_one: int
    in_classes_of_two: int
    population: dict[str, PopulationUniqueness] = field(default_factory=dict)
    individual: IndividualRisk | None = None
    household: IndividualRisk | None = None
    suda: Suda2Result | None = None

    @property
    def riskiest_rows(self) -> list[int]:
        """The rows at the highest risk, highest first: by individual (or household) risk
        when weights were given, else the rows alone in their class."""
        measured = self.household or self.individual
        if measured is not None:
            return measured.riskiest(RISKIEST).tolist()
        return []

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "rows": self.rows, "classes": self.classes,
            "quasi_identifiers": self.quasi_identifiers,
            "sample_uniques": self.in_classes_of_one,
            "records_in_classes_of_two": self.in_classes_of_two,
        }
        if self.population:
            out["population_uniqueness"] = {
                name: {"uniques": json_number(p.uniques), "share": json_number(p.share),
                       "model": p.model, "converged": p.converged,
                       "sampling_fraction": json_number(p.sampling_fraction),
                       "population_size": json_number(p.population_size)}
                for name, p in self.population.items()}
        if self.suda is not None:
            out["suda2"] = {
                "max_msu": self.suda.max_msu,
                "msus_by_size": self.suda.msu_counts.sum(axis=0).tolist(),
                "special_uniques": self.suda.special_uniques,
                "dis": json_number(self.suda.dis),
                "riskiest_rows": self.suda.top_records(RISKIEST).tolist()}
        for name, measured in (("individual_risk", self.individual),
                               ("household_risk", self.household)):
            if measured is not None:
                out[name] = {
                    "expected_reidentifications": json_number(
                        measured.expected_reidentifications),
                    "global_risk": json_number(measured.global_risk),
                    "highest": json_number(float(measured.risk.max(initial=0.0))),
                    "riskiest_rows": measured.riskiest(RISKIEST).tolist()}
        return out

    def __str__(self) -> str:
        lines = [f"{self.rows} rows in {self.classes} classes over "
                 f"{', '.join(self.quasi_identifiers)}",
                 f"  sample uniques: {self.in_classes_of_one} records "
                 f"({_percent(self.in_classes_of_one, self.rows)}); in classes of two: "
                 f"{self.in_classes_of_two} ({_percent(self.in_classes_of_two, self.rows)})"]
        if self.population:
            first = next(iter(self.population.values()))
            lines.append(f"  population uniques (sampling fraction "
                         f"{first.sampling_fraction:.4g}, population "
                         f"{first.population_size:,.0f}):")
            for name, p in self.population.items():
                how = f" (picked {p.model})" if name == "dankar" else ""
                figure = ("no estimate (the fit did not converge)" if not p.converged
                          else f"{p.uniques:,.1f} records, {p.share:.4%} of the population")
                lines.append(f"    {name}{how}: {figure}")
        if self.suda is not None:
            sizes = ", ".join(f"{int(n):,}" for n in self.suda.msu_counts.sum(axis=0))
            lines.append(f"  SUDA2 (MSUs of at most {self.suda.max_msu} QIs): "
                         f"{self.suda.special_uniques} special uniques; MSUs by size {sizes};"
                         f" highest DIS-SUDA rows: "
                         f"{', '.join(map(str, self.suda.top_records(5).tolist()))}")
        for name, measured in (("individual risk", self.individual),
                               ("household risk", self.household)):
            if measured is not None:
                lines.append(
                    f"  {name}: expected re-identifications "
                    f"{measured.expected_reidentifications:.2f} "
                    f"({measured.global_risk:.4%} of the records); highest "
                    f"{float(measured.risk.max(initial=0.0)):.4f}; riskiest rows: "
                    f"{', '.join(map(str, measured.riskiest(5).tolist()))}")
        return "\n".join(lines)


def _percent(part: int, whole: int) -> str:
    return f"{part / whole:.2%}" if whole else "0%"


def risk(df: pd.DataFrame, quasi_identifiers: str | Sequence[str], *,
         sampling_fraction: float | None = None, population_size: float | None = None,
         weight: str | None = None, household: str | None = None,
         max_msu: int | None = 5) -> RiskReport:
    """The re-identification risk of ``df`` by its ``quasi_identifiers`` (rows with equal
    values are one class; a missing value is a value). ``sampling_fraction`` or
    ``population_size``: the table is a sample of a population, whose uniques are then
    estimated by Pitman, Zayatz and SNB, and Dankar et al.'s rule picks one. ``weight``: a
    column of survey weights (each record stands for that many people) for the individual
    and global risk; ``household``: a column naming each record's household, for the
    household risk (needs ``weight``). ``max_msu``: the largest minimal sample uniques SUDA2
    looks for (Manning et al. 2008; None: no SUDA2)."""
    qis = as_list(quasi_identifiers)
    if not qis:
        raise InputError("no quasi-identifiers given: pass --qi a,b,c")
    missing = [c for c in [*qis, *([weight] if weight else []),
                           *([household] if household else [])] if c not in df.columns]
    if missing:
        raise InputError(f"unknown column {missing[0]!r}; the table has: "
                         f"{', '.join(map(str, df.columns[:20]))}"
                         f"{' ...' if len(df.columns) > 20 else ''}")
    if household is not None and weight is None:
        raise InputError("--household needs --weight: a household's risk comes from its "
                         "members' individual risks, which need survey weights")
    class_ids, n_classes, _ = group_rows(df, qis)  # classes numbered 0 .. n_classes - 1
    class_ids = np.asarray(class_ids, dtype=np.int64)
    sizes = np.bincount(class_ids, minlength=n_classes)
    per_row = sizes[class_ids]
    report = RiskReport(len(df), int(n_classes), qis, int((per_row == 1).sum()),
                        int((per_row == 2).sum()))
    if sampling_fraction is not None or population_size is not None:
        report.population = {
            model: population_uniqueness(sizes, sampling_fraction,
                                         population_size=population_size, model=model)
            for model in MODELS}
    if max_msu is not None:
        codes = np.stack([pd.factorize(df[q], use_na_sentinel=False)[0] for q in qis],
                         axis=1) if len(df) else np.zeros((0, len(qis)), dtype=np.int64)
        report.suda = suda2(codes, max_msu) if len(df) else None
    if weight is not None:
        weights = pd.to_numeric(df[weight], errors="coerce").to_numpy(dtype=np.float64)
        report.individual = individual_risk(class_ids, weights)
        if household is not None:
            homes, _ = pd.factorize(df[household], use_na_sentinel=False)
            report.household = household_risk(report.individual.risk, homes)
    return report
