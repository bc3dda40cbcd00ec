"""m-invariance's perimeter split (spec 001), written plainly: the oracle of the kernel."""

from __future__ import annotations

import numpy as np


def split_scores(lists: list[np.ndarray], ranges: np.ndarray, q: int, *,
                 weighted: bool = True) -> np.ndarray:
    """The score of every split index ``i = 1 .. N - 1`` of one bucket's ``lists`` (one
    (N, Q) coordinate array per value) sorted by QI ``q``, written plainly: the reference
    for the tests and the known-answer example of spec 001."""
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    spans = np.where(np.asarray(ranges, dtype=np.float64) > 0, ranges, 1.0)
    out = []
    for i in range(1, len(lists[0])):
        score = 0.0
        for half in ([o[:i] for o in ordered], [o[i:] for o in ordered]):
            stacked = np.concatenate(half)
            perimeter = 0.0
            for width in (stacked.max(axis=0) - stacked.min(axis=0)) / spans:
                perimeter += width  # in QI order, as the compiled split adds them
            score += perimeter * (len(stacked) if weighted else 1)
        out.append(score)
    return np.asarray(out)


def reference_split(lists: list[np.ndarray], ranges: np.ndarray, *, weighted: bool = True
                    ) -> list[list[np.ndarray]]:
    """The split rule written plainly, for tests: ``lists`` holds one (N, Q) coordinate array
    per value; returns the final classes, each as one coordinate row per list."""
    if len(lists[0]) == 1:
        return [[lst[0] for lst in lists]]
    # per QI its lowest score at its earliest split index; the lowest wins, the earlier QI
    # on a tie (tuples compare score first, then QI)
    candidates = []
    for q in range(lists[0].shape[1]):
        scores = split_scores(lists, ranges, q, weighted=weighted)
        i = int(np.argmin(scores))  # the earliest of equal scores
        candidates.append((float(scores[i]), q, i + 1))
    _, q, i = min(candidates)
    ordered = [lst[np.argsort(lst[:, q], kind="stable")] for lst in lists]
    return (reference_split([o[:i] for o in ordered], ranges, weighted=weighted) +
            reference_split([o[i:] for o in ordered], ranges, weighted=weighted))
