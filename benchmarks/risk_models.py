"""The risk measures as privacy models, on the bundled Adult table (30,162 rows): a 10 %
sample (3,016 rows) is anonymized with Mondrian under each model, the population being the
whole table, and the released sample is checked against the population from its labels.
Plain k-anonymity with the same k is the peer in the same run; the whole table as its own
population (30,162 sample rows against 30,162 people) is the large case.

There is no target in the issue for these: the figures say what a model costs over plain
Mondrian (the population rows followed through the cuts, the labels' cover of the
population in the check).

Run: ``python benchmarks/risk_models.py [--repeat R]``. Times are the best of ``--repeat``
(3) runs, warm; ``anonymize`` includes the verification of the release.
"""

from __future__ import annotations

import argparse
import warnings

import pandas as pd
from timing import best_of, print_table

import anonkit
from anonkit.checker import check

QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass",
       "occupation"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    adult = anonkit.load_adult().data
    sample = adult.sample(frac=0.1, random_state=0).reset_index(drop=True).assign(weight=10.0)
    cases: list[tuple[str, pd.DataFrame, list[str], dict[str, object]]] = [
        ("k=2 alone (peer)", sample, [], {}),
        ("k-map=20, population table", sample, ["k-map=20"], {"population": adult}),
        ("delta-presence=0,0.5", sample, ["delta-presence=0,0.5"], {"population": adult}),
        ("k-map=20, estimated (pi 0.1)", sample, ["k-map=20"], {"sampling_fraction": 0.1}),
        ("individual-risk=0.05, weights", sample, ["individual-risk=0.05"],
         {"weight": "weight"}),
        ("population-uniqueness=0.01", sample, ["population-uniqueness=0.01"],
         {"sampling_fraction": 0.1}),
        ("whole table: k=2 alone (peer)", adult, [], {}),
        ("whole table: k-map=20", adult, ["k-map=20"], {"population": adult}),
    ]
    rows = []
    for name, table, models, context in cases:
        def run(table: pd.DataFrame = table, models: list[str] = models,
                context: dict[str, object] = context) -> anonkit.Release:
            return anonkit.anonymize(table, "mondrian", quasi_identifiers=QIS,
                                     sensitive="salary-class", insensitive="*", k=2,
                                     models=models, **context)
        seconds, release = best_of(run, args.repeat)
        assert isinstance(release, anonkit.Release)
        verdict = release.verdicts[-1]
        rows.append((f"anonymize: {name}", f"{seconds:.3f}", "-",
                     f"{len(table):,} rows, {verdict.n_classes:,} classes, "
                     f"{'PASS' if release.passed else 'FAIL'} {verdict.measure} = "
                     f"{verdict.measured:.4g}"))
        if "population" in context:
            released = release.data
            seconds, report = best_of(lambda released=released, models=models: check(
                released, QIS, models=models, population=adult), args.repeat)
            rows.append((f"check: {name}", f"{seconds:.3f}", "-",
                         f"{report.n_classes:,} classes against {len(adult):,} people"))
    print_table(f"Adult: Mondrian k=2 on {len(QIS)} QIs with each risk model", rows)


if __name__ == "__main__":
    main()
