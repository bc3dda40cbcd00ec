"""Cross-release attack audit: what intersecting releases reveals about a record.

Each release of a dataset may be safe on its own and still leak through its intersection
with another (spec 003, "Incremental Anonymity"; spec 004, Lemma 1): a steward who re-runs a
one-shot algorithm on every version of a changing table puts a person into different
classes each time, and the overlap of those classes is smaller and less diverse than any
one of them. This module measures that overlap for every record the history saw in two or
more releases, from the history alone (class multisets and the pseudonym -> class map).

Adversaries (both assume a person's sensitive value does not change between releases, and
both are given the target's true class in every release -- the worst case when released
labels overlap):

``qi`` -- *knows the target's exact quasi-identifiers and that the target is in every
    release*. With its QIs, the target's class in each release is found; its sensitive value
    must be in each of those classes' released multisets, so in their intersection. The
    number of people who can be in all those classes is at most
    ``sum over v in the intersection of min_i count_i(v)`` -- the adversary's candidate count.
    It cannot tell which rows of two releases are the same person.

``linkage`` -- *additionally links rows across releases* (worst case: a persistent
    pseudonym on every row, here the history's own HMAC pseudonym). The candidates are then
    exactly the records that shared the target's class in every release: the intersection
    of the classes as sets of records (for non-overlapping boxes, this *is* the intersection
    of the QI ranges: a record shares every box of the target iff it shares its classes).
    Their values are a subset of the value intersection, so this adversary's distinct count
    is at most ``min(|value intersection|, candidates)``, and a lone candidate pins the
    value. The history keeps no per-record sensitive value (on purpose: it would make a
    stolen history a table of pseudonym -> value), so the linkage adversary's diversity is
    bounded from above: every breach reported is certain, a few may be missed.

A record is *breached* in a scope (a pair of releases, or all releases that contain it)
when, for one adversary,

- its candidates are fewer than ``k`` (k-anonymity);
- its candidate sensitive values number fewer than ``l`` (l-diversity; also the ``k`` of
  (k,e)-anonymity, which counts distinct values);
- its candidate values span a range below ``e`` ((k,e)-anonymity, numeric attributes);
- a single candidate value remains: the exact value is pinned (always checked).

Thresholds come from the privacy models the releases recorded (the largest of the releases
in the scope: a breach of any release's promise counts), and can be given explicitly. An
empty value intersection (the value changed between releases) is no disclosure and is not
counted. Everything is vectorised: a scope costs a few sorts and searches over its records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from anonkit.errors import HistoryError
from anonkit.models import KAnonymity, KEAnonymity
from anonkit.releases.store import HistoryStore, ReleaseInfo, ReleaseView

ADVERSARIES = {
    "qi": "knows the target's exact quasi-identifiers and that the target is in every "
          "release; cannot link rows across releases",
    "linkage": "also links the target's rows across releases (a persistent pseudonym): "
               "candidates are the records that shared every one of the target's classes",
}
PINNED = "exact disclosure"
_N_WORST = 5
_N_VALUES_SHOWN = 10


@dataclass(frozen=True)
class Requirement:
    """``measure >= threshold`` for every record, from ``model``."""

    model: str
    measure: str  # "candidates", "distinct" or "range"
    threshold: float

    def describe(self) -> str:
        noun = {"candidates": "candidates", "distinct": "distinct sensitive values",
                "range": "sensitive range"}[self.measure]
        return f"{noun} >= {self.threshold:g}"


def requirements_of(info: ReleaseInfo) -> list[Requirement]:
    """What a release promised, read from its recorded verdicts."""
    out = []
    for verdict in info.verdicts:
        name = str(verdict.get("model", ""))
        params = verdict.get("parameters") or {}
        assert isinstance(params, dict)
        if name == KAnonymity.name and "k" in params:
            out.append(Requirement(name, "candidates", float(params["k"])))
        elif "diversity" in name and "l" in params:
            # every l-diversity variant (distinct, entropy, recursive (c,l)) implies at
            # least l distinct sensitive values per class
            out.append(Requirement(name, "distinct", float(params["l"])))
        elif name == KEAnonymity.name:
            if "k" in params:
                out.append(Requirement(name, "distinct", float(params["k"])))
            if "e" in params:
                out.append(Requirement(name, "range", float(params["e"])))
    return out


def _merge(requirements: Sequence[Requirement]) -> list[Requirement]:
    """The strictest threshold per (model, measure)."""
    best: dict[tuple[str, str], Requirement] = {}
    for r in requirements:
        key = (r.model, r.measure)
        if key not in best or r.threshold > best[key].threshold:
            best[key] = r
    return list(best.values())


# -- results -------------------------------------------------------------------------------


@dataclass
class Finding:
    """Records of one scope that one adversary breaches under one requirement."""

    adversary: str
    model: str
    measure: str
    attribute: str | None
    threshold: float
    records: int
    worst: list[dict[str, object]] = field(default_factory=list)

    def describe(self) -> str:
        """E.g. ``k-anonymity (linkage adversary: candidates >= 5)``."""
        attr = f" on {self.attribute!r}" if self.attribute else ""
        need = ("one candidate value left" if self.model == PINNED
                else Requirement(self.model, self.measure, self.threshold).describe())
        return f"{self.model}{attr} ({self.adversary} adversary: {need})"

    def to_dict(self) -> dict[str, object]:
        return {"adversary": self.adversary, "model": self.model, "measure": self.measure,
                "attribute": self.attribute, "threshold": self.threshold,
                "records": self.records, "worst": self.worst}


@dataclass
class ScopeResult:
    """The audit of a pair of releases (``kind="pair"``) or of every record over all the
    releases that contain it (``kind="all"``)."""

    kind: str
    releases: tuple[int, ...]
    records_compared: int
    records_breached: int
    findings: list[Finding]
    breached_by: dict[str, int] = field(default_factory=dict)  # adversary -> records

    @property
    def name(self) -> str:
        return ("releases " + " & ".join(map(str, self.releases)) if self.kind == "pair"
                else "all releases")

    def count(self, adversary: str | None = None, model: str | None = None) -> int:
        """Breached records of one finding (summing findings would double count)."""
        return sum(f.records for f in self.findings
                   if (adversary is None or f.adversary == adversary)
                   and (model is None or f.model == model))

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "releases": list(self.releases),
                "records_compared": self.records_compared,
                "records_breached": self.records_breached,
                "records_breached_by_adversary": dict(self.breached_by),
                "findings": [f.to_dict() for f in self.findings]}


@dataclass
class AuditReport:
    dataset: str
    releases: list[int]
    requirements: list[Requirement]
    pairs: list[ScopeResult]
    overall: ScopeResult | None
    records_breached: int  # distinct records breached in any scope

    @property
    def breached(self) -> bool:
        return self.records_breached > 0

    def to_dict(self) -> dict[str, object]:
        return {
            "dataset": self.dataset, "releases": self.releases,
            "breached": self.breached, "records_breached": self.records_breached,
            "adversaries": ADVERSARIES,
            "requirements": [{"model": r.model, "measure": r.measure,
                              "threshold": r.threshold} for r in self.requirements],
            "pairs": [p.to_dict() for p in self.pairs],
            "all_releases": self.overall.to_dict() if self.overall else None,
        }

    def summary(self) -> str:
        lines = [f"audit of {self.dataset!r}, releases {', '.join(map(str, self.releases))}: "
                 + (f"{self.records_breached} records breached" if self.breached
                    else "no breach found")]
        if len(self.releases) < 2:
            lines.append("  (fewer than two releases: nothing to intersect)")
        for scope in [*self.pairs, *([self.overall] if self.overall else [])]:
            compared = "in both" if scope.kind == "pair" else "in two or more releases"
            lines.append(f"  {scope.name}: {scope.records_compared} records {compared}, "
                         f"{scope.records_breached} breached")
            for f in scope.findings:
                lines.append(f"    {f.records:>8} {f.describe()}")
        return "\n".join(lines)


# -- the audit ---------------------------------------------------------------------------


class CrossReleaseBreachError(HistoryError):
    """A release was refused: together with earlier releases it would breach records."""

    exit_code = 3


def audit(store: HistoryStore, dataset: str, *, k: float | None = None,
          l: float | None = None, e: float | None = None,  # noqa: E741
          focus: int | None = None, worst: int = _N_WORST) -> AuditReport:
    """Audit every release of ``dataset`` against every other (see the module); with
    ``focus``, only the pairs and intersections that involve release number ``focus``."""
    infos = store.releases(dataset)  # HistoryError for an unknown dataset
    if focus is not None and focus not in {i.seq for i in infos}:
        store.release(dataset, focus)  # the error naming the releases there are
    views = [store.load(info, labels=False) for info in infos]
    return audit_views(views, k=k, l=l, e=e, focus=focus, worst=worst)


def audit_views(views: Sequence[ReleaseView], *, k: float | None = None,
                l: float | None = None, e: float | None = None,  # noqa: E741
                focus: int | None = None, worst: int = _N_WORST) -> AuditReport:
    """The audit of releases already loaded (in publication order); ``focus`` as in
    :func:`audit` (used to check a release before it is published)."""
    views = sorted(views, key=lambda v: v.info.seq)
    dataset = views[0].info.dataset if views else ""
    seqs = [v.info.seq for v in views]
    focused = seqs.index(focus) if focus is not None else None
    overrides = [Requirement("k-anonymity", "candidates", k) if k is not None else None,
                 Requirement("distinct l-diversity", "distinct", l) if l is not None else None,
                 Requirement("(k,e)-anonymity", "range", e) if e is not None else None]
    given = [r for r in overrides if r is not None]
    state = _State(views, given, worst)
    pairs = [state.scope("pair", (i, j)) for i in range(len(views))
             for j in range(i + 1, len(views)) if focused in (None, i, j)]
    overall = state.overall(focused) if len(views) >= 2 else None
    requirements = _merge([r for i in range(len(views)) for r in state.requirements(i)])
    return AuditReport(dataset, [v.info.seq for v in views], requirements, pairs, overall,
                       int(state.breached_any.sum()))


@dataclass
class _Measures:
    """Per target record of a scope: what each adversary is left with. Records sharing
    every class form a *class tuple*; value intersections are computed once per tuple."""

    candidates_linkage: np.ndarray  # records that shared every class of the target
    candidates_qi: np.ndarray  # upper bound on people consistent with every multiset
    distinct: dict[str, np.ndarray]  # values in every class's multiset, per attribute
    distinct_present: dict[str, np.ndarray]  # the same, not counting a missing value
    span: dict[str, np.ndarray]  # their numeric range (NaN: none, or not numeric)
    tuple_classes: np.ndarray  # (n_releases_in_scope, n_tuples): the classes of each tuple
    tuple_of: np.ndarray  # per target: its class tuple


@dataclass
class _Sparse:
    """One release's multisets of one attribute with global value ids, sorted by
    (class, value): ``key = class * n_values + value`` is sorted too."""

    starts: np.ndarray  # (n_classes + 1,)
    value: np.ndarray
    count: np.ndarray
    key: np.ndarray


class _State:
    def __init__(self, views: Sequence[ReleaseView], given: list[Requirement],
                 worst: int) -> None:
        self.views = views
        self.given = given
        self.worst = worst
        all_keys = np.concatenate([v.record_keys for v in views]) if views else np.zeros(0)
        gids, self.pseudonyms = pd.factorize(all_keys)
        self.n_records = len(self.pseudonyms)
        # class of every record in every release (-1: absent), as one dense matrix
        self.cls = np.full((len(views), self.n_records), -1, dtype=np.int32)
        offset = 0
        for i, v in enumerate(views):
            n = len(v.record_keys)
            self.cls[i, gids[offset:offset + n]] = v.record_classes
            offset += n
        self.attributes = list(views[-1].info.sensitive) if views else []
        self.value_names: dict[str, np.ndarray] = {}
        self.magnitude: dict[str, np.ndarray] = {}
        self.numeric: dict[str, bool] = {}
        self.sparse: dict[str, list[_Sparse]] = {}
        for attr in self.attributes:
            self._index_values(attr)
        self.breached_any = np.zeros(self.n_records, dtype=bool)

    def _index_values(self, attr: str) -> None:
        """Global value ids over all releases, in numeric order for a numeric attribute
        (so a range is the last minus the first value of a sorted run)."""
        per_release = [v.values[attr] for v in self.views]
        numeric = all(cv.numeric for cv in per_release)
        lengths = [len(cv.value) for cv in per_release]
        if numeric:
            every = np.concatenate([cv.value.astype(np.float64) for cv in per_release])
            names = np.unique(every)  # sorted; missing (NaN) last
            gids = np.searchsorted(names, every)
            mags = names
        else:
            every = np.concatenate([cv.value.astype(object) for cv in per_release])
            codes, uniques = pd.factorize(pd.Series(every, dtype=object))
            names = np.append(np.asarray(uniques, dtype=object), None)  # -1: missing
            gids = np.where(codes < 0, len(uniques), codes)
            mags = np.full(len(names), np.nan)
        self.value_names[attr], self.magnitude[attr] = names, mags
        self.numeric[attr] = numeric
        n_values = max(len(names), 1)
        sparse = []
        bounds = np.cumsum([0, *lengths])
        for v, cv, lo, hi in zip(self.views, per_release, bounds[:-1], bounds[1:], strict=True):
            gid = gids[lo:hi].astype(np.int64)
            key = cv.class_index * n_values + gid
            order = np.argsort(key, kind="stable")
            starts = np.searchsorted(cv.class_index[order], np.arange(v.n_classes + 1))
            sparse.append(_Sparse(starts, gid[order], cv.count[order], key[order]))
        self.sparse[attr] = sparse

    def requirements(self, i: int) -> list[Requirement]:
        """Release ``i``'s promises; an explicit threshold replaces those of its measure."""
        given = {r.measure for r in self.given}
        found = [r for r in requirements_of(self.views[i].info) if r.measure not in given]
        return found + self.given

    # -- scopes ------------------------------------------------------------------------
    def scope(self, kind: str, releases: tuple[int, ...],
              targets: np.ndarray | None = None) -> ScopeResult:
        """Audit ``targets`` (records present in every release of ``releases``; default:
        all such records) over those releases."""
        present = (self.cls[list(releases)] >= 0).all(axis=0)
        if targets is None:
            targets = np.flatnonzero(present)
        measures = self._measures(releases, present, targets)
        requirements = _merge([r for i in releases for r in self.requirements(i)])
        findings, by_adversary = self._findings(requirements, releases, targets, measures)
        breached = by_adversary["qi"] | by_adversary["linkage"]
        self.breached_any[targets[breached]] = True
        seqs = tuple(self.views[i].info.seq for i in releases)
        return ScopeResult(kind, seqs, len(targets), int(breached.sum()), findings,
                           {a: int(mask.sum()) for a, mask in by_adversary.items()})

    def overall(self, focused: int | None = None) -> ScopeResult:
        """Every record present in two or more releases (with ``focused``: and in that
        one), over all the releases containing it (the tightest intersection: intersecting
        more releases only narrows it)."""
        presence = self.cls >= 0
        patterns, pattern_of = np.unique(presence.T, axis=0, return_inverse=True)
        pattern_of = pattern_of.reshape(-1)
        counted = np.zeros(self.n_records, dtype=bool)
        merged: dict[tuple[str, str, str | None], Finding] = {}
        breached_total = 0
        by_adversary = dict.fromkeys(ADVERSARIES, 0)
        for p, pattern in enumerate(patterns):
            releases = tuple(int(i) for i in np.flatnonzero(pattern))
            if len(releases) < 2 or (focused is not None and focused not in releases):
                continue
            targets = np.flatnonzero(pattern_of == p)
            counted[targets] = True
            part = self.scope("all", releases, targets)
            breached_total += part.records_breached
            for a, n_breached in part.breached_by.items():
                by_adversary[a] += n_breached
            for f in part.findings:
                key = (f.adversary, f.model, f.attribute)
                if key not in merged:
                    merged[key] = Finding(f.adversary, f.model, f.measure, f.attribute,
                                          f.threshold, 0, [])
                m = merged[key]
                m.records += f.records
                m.threshold = max(m.threshold, f.threshold)
                m.worst = sorted(m.worst + f.worst, key=_worst_key)[:self.worst]
        findings = sorted(merged.values(), key=_finding_order)
        return ScopeResult("all", tuple(v.info.seq for v in self.views), int(counted.sum()),
                           breached_total, findings, by_adversary)

    # -- measures ----------------------------------------------------------------------
    def _measures(self, releases: tuple[int, ...], present: np.ndarray,
                  targets: np.ndarray) -> _Measures:
        members = np.flatnonzero(present)
        cls = self.cls[np.ix_(list(releases), members)].astype(np.int64)
        # records sharing every class: one group id per distinct class tuple
        group = np.zeros(len(members), dtype=np.int64)
        for row in cls:
            _, group = np.unique(group * (int(row.max()) + 1) + row, return_inverse=True)
            group = group.reshape(-1)
        target_group = group[np.searchsorted(members, targets)]
        candidates_link = np.bincount(group)[target_group]
        # per distinct class tuple among the targets: the value intersection
        tuples, tuple_of = np.unique(target_group, return_inverse=True)
        tuple_of = tuple_of.reshape(-1)
        representative = np.zeros(len(tuples), dtype=np.int64)
        representative[tuple_of[::-1]] = np.arange(len(targets))[::-1]
        tuple_classes = self.cls[np.ix_(list(releases), targets[representative])].astype(
            np.int64)
        sizes = np.stack([self.views[i].sizes[tuple_classes[j]]
                          for j, i in enumerate(releases)])
        candidates_qi = sizes.min(axis=0).astype(np.float64)
        distinct: dict[str, np.ndarray] = {}
        distinct_present: dict[str, np.ndarray] = {}
        span: dict[str, np.ndarray] = {}
        for attr in self.attributes:
            d, dp, c, s = self._value_intersection(attr, releases, tuple_classes)
            candidates_qi = np.minimum(candidates_qi, c)
            distinct[attr], span[attr] = d[tuple_of], s[tuple_of]
            distinct_present[attr] = dp[tuple_of]
        return _Measures(candidates_link, candidates_qi[tuple_of], distinct, distinct_present,
                         span,
                         tuple_classes, tuple_of)

    def _value_intersection(self, attr: str, releases: tuple[int, ...],
                            tuple_classes: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per class tuple: number of values in every class's multiset (with and without
        the missing value), the sum over them of the smallest count, and their numeric
        range (NaN if none or not numeric)."""
        n_tuples = tuple_classes.shape[1]
        group, value, count = self._entries(attr, releases, tuple_classes)
        distinct = np.bincount(group, minlength=n_tuples)
        missing = self._missing_id(attr)
        distinct_present = distinct - np.bincount(group[value == missing], minlength=n_tuples)
        candidates = np.bincount(group, weights=count, minlength=n_tuples)
        span = np.full(n_tuples, np.nan)
        if len(group):
            mags = self.magnitude[attr][value]
            starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
            owners = group[starts]
            span[owners] = np.fmax.reduceat(mags, starts) - np.fmin.reduceat(mags, starts)
        return distinct, distinct_present, candidates, span

    def _missing_id(self, attr: str) -> int:
        """The global id of the missing value of ``attr`` (-1 when it never occurs)."""
        names = self.value_names[attr]
        if self.numeric[attr]:
            nan = np.flatnonzero(np.isnan(names.astype(np.float64)))
            return int(nan[0]) if len(nan) else -1
        return len(names) - 1  # a None is appended after the values

    def _entries(self, attr: str, releases: tuple[int, ...],
                 tuple_classes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (tuple, value, min count) entries of the value intersection, sorted by
        tuple then value: expand the first release's multisets, look the values up in
        every other release's class."""
        sparse = [self.sparse[attr][i] for i in releases]
        n_values = max(len(self.value_names[attr]), 1)
        first = sparse[0]
        lo = first.starts[tuple_classes[0]]
        lengths = first.starts[tuple_classes[0] + 1] - lo
        group = np.repeat(np.arange(tuple_classes.shape[1]), lengths)
        within = np.arange(len(group)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        idx = np.repeat(lo, lengths) + within
        value, count = first.value[idx], first.count[idx]
        for j, sp in enumerate(sparse[1:], start=1):
            query = tuple_classes[j][group] * n_values + value
            pos = np.minimum(np.searchsorted(sp.key, query), max(len(sp.key) - 1, 0))
            found = sp.key[pos] == query if len(sp.key) else np.zeros(len(query), bool)
            count = np.minimum(count, sp.count[pos] if len(sp.key) else 0)
            group, value, count = group[found], value[found], count[found]
        return group, value, count

    # -- breaches ----------------------------------------------------------------------
    def _findings(self, requirements: list[Requirement], releases: tuple[int, ...],
                  targets: np.ndarray, m: _Measures
                  ) -> tuple[list[Finding], dict[str, np.ndarray]]:
        """One finding per (adversary, requirement, attribute) that some target breaks,
        and per adversary which targets it breaches at all."""
        cand_link = m.candidates_linkage
        # (adversary, requirement, attribute, level per target, breached per target)
        checks: list[tuple[str, Requirement, str | None, np.ndarray, np.ndarray]] = []
        pinned = Requirement(PINNED, "distinct", 2.0)
        for adversary, cand in (("qi", m.candidates_qi), ("linkage", cand_link)):
            for r in requirements:
                if r.measure == "candidates":
                    checks.append((adversary, r, None, cand, cand < r.threshold))
            for attr in self.attributes:
                d, s = m.distinct[attr], m.span[attr]
                dp = m.distinct_present[attr]
                if adversary == "linkage":  # candidates' values: a subset of the intersection
                    d = np.minimum(d, cand_link)
                    dp = np.minimum(dp, cand_link)
                    s = np.where(cand_link == 1, 0.0, s)
                consistent = d >= 1  # an empty intersection reveals nothing
                for r in requirements:
                    if r.measure == "distinct":
                        # (k,e)-anonymity counts only present values; l-diversity counts a
                        # missing value as a value, as the models themselves do
                        level = dp if r.model == KEAnonymity.name else d
                        checks.append((adversary, r, attr, level,
                                       consistent & (level < r.threshold)))
                    elif r.measure == "range" and self.numeric[attr]:
                        checks.append((adversary, r, attr, s,
                                       consistent & ~np.isnan(s) & (s < r.threshold)))
                checks.append((adversary, pinned, attr, d, d == 1))
        breached = {a: np.zeros(len(targets), dtype=bool) for a in ADVERSARIES}
        findings = []
        for adversary, r, attr, level, mask in checks:
            if mask.any():
                breached[adversary] |= mask
                findings.append(Finding(adversary, r.model, r.measure, attr, r.threshold,
                                        int(mask.sum()),
                                        self._worst(releases, targets, mask, level, attr, m)))
        return sorted(findings, key=_finding_order), breached

    def _worst(self, releases: tuple[int, ...], targets: np.ndarray, mask: np.ndarray,
               level: np.ndarray, attr: str | None, m: _Measures) -> list[dict[str, object]]:
        """The most exposed records of a finding: lowest level first."""
        idx = np.flatnonzero(mask)
        chosen = idx[np.lexsort((idx, np.nan_to_num(level[idx], nan=np.inf)))][:self.worst]
        seqs = [str(self.views[i].info.seq) for i in releases]
        out = []
        for t in chosen:
            classes = m.tuple_classes[:, m.tuple_of[t]]
            case: dict[str, object] = {
                "record": bytes(self.pseudonyms[int(targets[t])]).hex(),
                "level": _number(level[t]),
                "classes": dict(zip(seqs, map(int, classes), strict=True)),
                "class_sizes": {s: int(self.views[i].sizes[c])
                                for s, i, c in zip(seqs, releases, classes, strict=True)},
                "candidates_linkage": int(m.candidates_linkage[t]),
                "candidates_qi": _number(m.candidates_qi[t]),
            }
            for a in self.attributes if attr is None else [attr]:
                _, value, _ = self._entries(a, releases, classes[:, None])
                names = self.value_names[a][value]
                case[f"values[{a}]"] = [_plain(v) for v in names[:_N_VALUES_SHOWN]]
                if not math.isnan(m.span[a][t]):
                    case[f"range[{a}]"] = _number(m.span[a][t])
            out.append(case)
        return out


def _finding_order(f: Finding) -> tuple[int, str, str, str]:
    return (0 if f.adversary == "qi" else 1, f.model, f.measure, f.attribute or "")


def _worst_key(case: dict[str, object]) -> tuple[float, str]:
    level = case["level"]
    return (float(level) if isinstance(level, int | float) else math.inf, str(case["record"]))


def _number(x: float) -> float | int:
    x = float(x)
    return int(x) if x.is_integer() else x


def _plain(value: object) -> object:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) else _number(value)
    return value
