"""The average relative error of COUNT queries, the utility measure of m-invariance's
evaluation (Xiao and Tao, SIGMOD 2007).

A query asks how many people have a sensitive value ``v`` and every quasi-identifier in a
range: ``COUNT(*) WHERE q_1 IN [a_1, b_1] AND ... AND S = v``. The true answer counts the
input rows. The estimate is what an analyst reads from a generalized release: a row of a
class whose released extent on ``q`` covers ``w_q`` values and meets the query's range on
``o_q`` of them counts ``prod_q o_q / w_q`` (values assumed spread uniformly over the
extent). Every released row counts, counterfeit rows too: nobody can tell them apart, which
is the error counterfeits cost. The relative error is ``|estimate - true| / true``; each
query is drawn around a real row with that row's value, so its true answer is at least one.

Quasi-identifiers enter as ordered integer codes (a categorical column in its code order,
the hierarchy's leaf order when it has one), so a range is a run of codes and extents are
counted in codes. The queries are drawn from a fixed seed: the figure measures utility and
protects nothing, and a fixed seed makes releases comparable.
"""

from __future__ import annotations

import numpy as np

#: the queries drawn per release, and the share of each QI's codes a range covers
N_QUERIES = 200
SELECTIVITY = 0.5
QUERY_SEED = 20070611


def count_query_error(true_codes: np.ndarray, true_values: np.ndarray,
                      class_lo: np.ndarray, class_hi: np.ndarray, row_class: np.ndarray,
                      row_values: np.ndarray, cardinality: np.ndarray, *,
                      n_queries: int = N_QUERIES, selectivity: float = SELECTIVITY,
                      seed: int = QUERY_SEED) -> dict[str, float]:
    """The average (and median) relative error of random COUNT queries.

    ``true_codes`` (n, Q) and ``true_values`` (n,): the input rows' QI codes and sensitive
    value codes. ``class_lo`` / ``class_hi`` (n_classes, Q): each released class's extent in
    codes. ``row_class`` / ``row_values``: every released row's class and value code.
    ``cardinality`` (Q,): codes per QI. Returns ``count_query.relative_error`` (mean),
    ``count_query.median_relative_error`` and ``count_query.queries`` (those answered)."""
    rng = np.random.default_rng(seed)
    n_q = true_codes.shape[1]
    if not len(true_values) or not n_queries:
        return {"count_query.queries": 0.0}
    # each query is centred near a real row and asks for its value, so its true answer is
    # at least one; its ranges cover a share ``selectivity`` of each QI's codes
    target = rng.integers(len(true_values), size=n_queries)
    span = np.maximum(np.ceil(cardinality * selectivity), 1).astype(np.int64)
    a = np.clip(true_codes[target] - (rng.random((n_queries, n_q)) * span).astype(np.int64),
                0, np.maximum(cardinality - span, 0))
    b = a + span - 1
    query_value = true_values[target]
    # int32 codes and float32 shares: half the memory the broadcasts below stream through
    a, b = a.astype(np.int32), b.astype(np.int32)
    true_codes = true_codes.astype(np.int32)
    row_lo = class_lo[row_class].astype(np.int32)
    row_hi = class_hi[row_class].astype(np.int32)
    row_width = (row_hi - row_lo + 1).astype(np.float32)
    errors = np.empty(n_queries)
    true_order = np.argsort(true_values, kind="stable")
    row_order = np.argsort(row_values, kind="stable")
    n_values = int(max(row_values.max(initial=0), true_values.max(initial=0))) + 2
    true_at = np.searchsorted(true_values[true_order], np.arange(n_values))
    row_at = np.searchsorted(row_values[row_order], np.arange(n_values))
    for value in np.unique(query_value):  # all the queries of one value at once
        asked = np.flatnonzero(query_value == value)
        people = true_codes[true_order[true_at[value]:true_at[value + 1]]]
        rows = row_order[row_at[value]:row_at[value + 1]]
        inside = np.ones((len(asked), len(people)), dtype=bool)
        share = np.ones((len(asked), len(rows)), dtype=np.float32)
        lo, hi, width = row_lo[rows], row_hi[rows], row_width[rows]
        for q in range(n_q):  # (queries, rows) arrays, one QI at a time: contiguous
            qa, qb = a[asked, q][:, None], b[asked, q][:, None]
            inside &= (people[:, q] >= qa) & (people[:, q] <= qb)
            overlap = np.minimum(hi[:, q], qb) - np.maximum(lo[:, q], qa) + 1
            np.maximum(overlap, 0, out=overlap)
            share *= overlap / width[:, q]
        actual = inside.sum(axis=1)
        estimate = share.sum(axis=1, dtype=np.float64)
        errors[asked] = np.abs(estimate - actual) / actual
    return {"count_query.relative_error": float(errors.mean()),
            "count_query.median_relative_error": float(np.median(errors)),
            "count_query.queries": float(n_queries)}
