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

``qi`` -- *knows the quasi-identifiers of everyone (so every record's class in every
    release: the worst case when released labels overlap) and that the target is in every
    release of the scope*, but cannot tell which rows of two releases are the same person.
    Its sensitive value must be in each of its classes' multisets; beyond that, the
    adversary counts: records sharing the same classes form *atoms*, each class's multiset
    is the sum of its atoms' values, each atom has as many values as people. Constraint
    propagation over these sums (:meth:`~anonkit.releases.knowledge.Intersections.deduce`)
    rules out the values no consistent assignment can give the target's atom -- e.g. when
    the other atoms of a class must use up its flu. It is sound (never rules out a possible
    value) but not complete. Its candidate count is
    ``sum over v in the intersection of min_i count_i(v)``.

``linkage`` -- *additionally links rows across releases* (worst case: a persistent
    pseudonym on every row, here the history's own HMAC pseudonym). The candidates are then
    exactly the records that shared the target's class in every release (the *cell*). A
    release that carries values on rows shows each linked person's value, so the target's
    values are exactly its cell's: the history keeps every record's released value for
    this, encrypted under the history's secret (see
    :data:`anonkit.releases.store.record_values_table`: a stolen history without the secret
    reveals nothing of them). A person whose rows show different values is no candidate for
    a value that does not change. Over permuted releases alone it links a person to groups,
    not values: it knows what the qi adversary deduces. A migrated history without recorded
    values falls back to a bound: at most as many values as candidates.

A single release that already left a record one value (a homogeneous class, which e.g.
k-anonymity allows) is no *cross-release* disclosure and is not reported as one.

A record is *breached* in a scope (a pair of releases, or all releases that contain it)
when, for one adversary,

- its candidates are fewer than ``k`` (k-anonymity);
- its candidate sensitive values number fewer than ``l`` (l-diversity; also the ``k`` of
  (k,e)-anonymity, which counts distinct values);
- its candidate values span a range below ``e`` ((k,e)-anonymity, numeric attributes);
- a single candidate value remains: the exact value is pinned (always checked).

Thresholds come from the cross-release requirements the releases recorded (each model
declares its own, :class:`~anonkit.models.base.CrossReleaseRequirement`; the largest of the
releases in the scope counts: a breach of any release's promise counts), and can be given
explicitly. A model that declares none (t-closeness, δ-disclosure, β-likeness: their
promise has no per-record measure across releases) is still checked for exact disclosure,
and the report lists it as such. An empty value intersection (the value changed between
releases) is no disclosure and is not counted.

Release kinds: counterfeit rows (m-invariance) are no people, so they are no identity
candidates (the qi adversary's bound uses class sizes less counterfeits, while the multisets
keep the counterfeits' values: nobody can tell which rows are fake; the linkage adversary's
candidates come from the record map, where counterfeits have no record). In a permuted
release the linkage adversary links a person to a group, not to a row's value: the bound
"distinct <= candidates, a lone candidate pins the value" holds only when some release of
the scope carries values on rows (see :class:`anonkit.releases.knowledge.Measures`).

The "all releases" scope is computed by :mod:`anonkit.releases.knowledge`, which gives the
same figures per record. Everything is vectorised: a scope costs a few sorts and searches
over its records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anonkit.errors import HistoryError
from anonkit.models.base import CrossReleaseRequirement, format_parameters
from anonkit.releases.knowledge import Intersections, Measures
from anonkit.releases.store import HistoryStore, ReleaseInfo, ReleaseView

ADVERSARIES = {
    "qi": "knows the target's exact quasi-identifiers and that the target is in every "
          "release; cannot link rows across releases",
    "linkage": "also links the target's rows across releases (a persistent pseudonym): "
               "candidates are the records that shared every one of the target's classes",
}
#: the adversaries a release's threat model claims to resist, by threat model (any other:
#: all of them). m-invariance (Xiao & Tao) claims an adversary who knows quasi-identifiers
#: and when records were inserted and deleted; its rows carry no pseudonym and are
#: shuffled, and its counterfeit rows are new in every release, so an adversary who could
#: link rows across releases would tell them apart: that is outside its claim.
CLAIMED_ADVERSARIES = {"m-invariance": ("qi",)}
OUTSIDE_CLAIM = "outside the claimed threat model"
PINNED = "exact disclosure"
EXACT_ONLY = "checked across releases only for exact disclosure"
_N_WORST = 5
_N_VALUES_SHOWN = 10

#: one type for what a model promises across releases
Requirement = CrossReleaseRequirement

#: the measures an explicit threshold (``-k``, ``-l``, ``-e``) replaces
_OVERRIDES = {"candidates": ("candidates",), "distinct": ("distinct", "distinct_present"),
              "range": ("range",)}


def requirements_of(info: ReleaseInfo) -> list[Requirement]:
    """What a release promised across releases: the requirements its models declared."""
    try:
        return [Requirement.from_dict(d) for d in info.requirements]
    except (KeyError, TypeError, ValueError) as exc:
        raise HistoryError(f"release {info.seq} of {info.dataset!r} has a malformed "
                           f"cross-release requirement ({exc}); the history is damaged"
                           ) from None


def exact_only_models(info: ReleaseInfo) -> list[str]:
    """The release's models that declared no cross-release requirement (named with their
    parameters): the audit checks them only for exact disclosure."""
    covered = {r.model for r in requirements_of(info)}
    out = []
    for m in info.models:
        name = str(m.get("model", ""))
        params = m.get("parameters") or {}
        if name not in covered:
            title = (f"{name} ({format_parameters(params)})"
                     if isinstance(params, dict) and params else name)
            if title not in out:
                out.append(title)
    return out


def _merge(requirements: Sequence[Requirement]) -> list[Requirement]:
    """The strictest threshold per (model, measure, attribute)."""
    best: dict[tuple[str, str, str | None], Requirement] = {}
    for r in requirements:
        key = (r.model, r.measure, r.attribute)
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
    #: every release of the scope declares a threat model that does not claim to resist
    #: this adversary: shown, but no breach for the gate (see CLAIMED_ADVERSARIES)
    outside_claim: bool = False

    def describe(self) -> str:
        """E.g. ``k-anonymity (linkage adversary: candidates >= 5)``."""
        attr = f" on {self.attribute!r}" if self.attribute else ""
        need = ("one candidate value left" if self.model == PINNED
                else Requirement(self.model, self.measure, self.threshold).describe())
        outside = f" [{OUTSIDE_CLAIM}]" if self.outside_claim else ""
        return f"{self.model}{attr} ({self.adversary} adversary: {need}){outside}"

    def to_dict(self) -> dict[str, object]:
        return {"adversary": self.adversary, "model": self.model, "measure": self.measure,
                "attribute": self.attribute, "threshold": self.threshold,
                "records": self.records, "worst": self.worst,
                "outside_claimed_threat_model": self.outside_claim}


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
    #: records breached only by adversaries outside the claimed threat models
    records_outside_claim: int = 0

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
                "records_breached_outside_claimed_threat_model": self.records_outside_claim,
                "findings": [f.to_dict() for f in self.findings]}


@dataclass
class AuditReport:
    dataset: str
    releases: list[int]
    requirements: list[Requirement]
    pairs: list[ScopeResult]
    overall: ScopeResult | None
    records_breached: int  # distinct records breached in any scope
    #: models that declared no cross-release requirement: checked only for exact disclosure
    exact_only: list[str] = field(default_factory=list)
    #: records breached only by adversaries outside every claimed threat model: shown,
    #: not counted in ``records_breached`` (the gate's figure)
    records_outside_claim: int = 0
    #: the row-wise intersection of released ranges, per pair of consecutive releases
    #: (:mod:`anonkit.releases.intersection`; its breaches are the linkage adversary's too)
    intersections: list[Any] = field(default_factory=list)

    @property
    def breached(self) -> bool:
        return self.records_breached > 0

    def to_dict(self) -> dict[str, object]:
        return {
            "dataset": self.dataset, "releases": self.releases,
            "breached": self.breached, "records_breached": self.records_breached,
            "records_breached_outside_claimed_threat_model": self.records_outside_claim,
            "adversaries": ADVERSARIES,
            "requirements": [r.to_dict() for r in self.requirements],
            "checked_only_for_exact_disclosure": list(self.exact_only),
            "pairs": [p.to_dict() for p in self.pairs],
            "all_releases": self.overall.to_dict() if self.overall else None,
            "row_wise_intersections": [s.to_dict() for s in self.intersections],
        }

    def summary(self) -> str:
        lines = [f"audit of {self.dataset!r}, releases {', '.join(map(str, self.releases))}: "
                 + (f"{self.records_breached} records breached" if self.breached
                    else "no breach found")
                 + (f"; {self.records_outside_claim} more records only by adversaries "
                    f"{OUTSIDE_CLAIM}s (shown, not counted)" if self.records_outside_claim
                    else "")]
        if len(self.releases) < 2:
            lines.append("  (fewer than two releases: nothing to intersect)")
        lines += [f"  {model}: {EXACT_ONLY}" for model in self.exact_only]
        for scope in [*self.pairs, *([self.overall] if self.overall else [])]:
            compared = "in both" if scope.kind == "pair" else "in two or more releases"
            outside = (f" (and {scope.records_outside_claim} only by adversaries "
                       f"{OUTSIDE_CLAIM})" if scope.records_outside_claim else "")
            lines.append(f"  {scope.name}: {scope.records_compared} records {compared}, "
                         f"{scope.records_breached} breached{outside}")
            for f in scope.findings:
                lines.append(f"    {f.records:>8} {f.describe()}")
        lines += [f"  {s.describe()}" for s in self.intersections]
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
    # labels: for the row-wise intersection of released ranges (the audit proper reads none)
    views = [store.load(info, labels=True) for info in infos]
    report = audit_views(views, k=k, l=l, e=e, focus=focus, worst=worst)
    from anonkit.releases.intersection import intersection_scopes

    report.intersections = intersection_scopes(views, k)
    return report


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
    exact_only: list[str] = []
    for v in views:
        exact_only += [m for m in exact_only_models(v.info) if m not in exact_only]
    return AuditReport(dataset, seqs, requirements, pairs, overall,
                       int(state.breached_any.sum()), exact_only,
                       int((state.outside_any & ~state.breached_any).sum()))


class _State:
    """The audit's judgement over the intersections of :class:`Intersections`."""

    def __init__(self, views: Sequence[ReleaseView], given: list[Requirement],
                 worst: int) -> None:
        self.index = Intersections(views)
        self.views = self.index.views
        self.given = given
        self.worst = worst
        self.attributes = self.index.attributes
        self.breached_any = np.zeros(self.index.n_records, dtype=bool)
        self.outside_any = np.zeros(self.index.n_records, dtype=bool)

    def requirements(self, i: int) -> list[Requirement]:
        """Release ``i``'s promises; an explicit threshold replaces those of its measure."""
        replaced = {m for r in self.given for m in _OVERRIDES[r.measure]}
        found = [r for r in requirements_of(self.views[i].info) if r.measure not in replaced]
        return found + self.given

    # -- scopes ------------------------------------------------------------------------
    def scope(self, kind: str, releases: tuple[int, ...]) -> ScopeResult:
        """Audit every record present in all of ``releases`` over those releases."""
        return self._judge(kind, self.index.measures(releases))

    def _judge(self, kind: str, m: Measures) -> ScopeResult:
        requirements = _merge([r for i in m.releases for r in self.requirements(i)])
        findings, by_adversary = self._findings(requirements, m)
        judged = self.judged_adversaries(m.releases)
        for f in findings:
            f.outside_claim = f.adversary not in judged
        breached = np.zeros(len(m.targets), dtype=bool)
        outside = np.zeros(len(m.targets), dtype=bool)
        for adversary, mask in by_adversary.items():
            if adversary in judged:
                breached |= mask
            else:
                outside |= mask
        outside &= ~breached
        self.breached_any[m.targets[breached]] = True
        self.outside_any[m.targets[outside]] = True
        seqs = tuple(self.views[i].info.seq for i in m.releases)
        return ScopeResult(kind, seqs, len(m.targets), int(breached.sum()), findings,
                           {a: int(mask.sum()) for a, mask in by_adversary.items()},
                           int(outside.sum()))

    def judged_adversaries(self, releases: Sequence[int]) -> set[str]:
        """The adversaries a scope is judged by: those some release of it claims to resist
        (a release with a threat model that names none claims them all), so a scope with
        one release that claims an adversary is judged by it."""
        out: set[str] = set()
        for i in releases:
            out |= set(CLAIMED_ADVERSARIES.get(self.views[i].info.threat_model, ADVERSARIES))
        return out

    def overall(self, focused: int | None = None) -> ScopeResult:
        """Every record present in two or more releases (with ``focused``: and in that
        one), over all the releases containing it: the intersections
        :func:`anonkit.releases.knowledge.knowledge` reports, judged."""
        presence = self.index.cls >= 0
        wanted = presence.sum(axis=0) >= 2
        if focused is not None:
            wanted &= presence[focused]
        targets = np.flatnonzero(wanted)
        merged: dict[tuple[str, str, str, str | None, bool], Finding] = {}
        breached_total = outside_total = 0
        by_adversary = dict.fromkeys(ADVERSARIES, 0)
        for m in self.index.accumulate(targets):
            part = self._judge("all", m)
            breached_total += part.records_breached
            outside_total += part.records_outside_claim
            for a, n_breached in part.breached_by.items():
                by_adversary[a] += n_breached
            for f in part.findings:
                # one finding per requirement: (k,e)'s distinct and range findings are two
                key = (f.adversary, f.model, f.measure, f.attribute, f.outside_claim)
                if key not in merged:
                    merged[key] = Finding(f.adversary, f.model, f.measure, f.attribute,
                                          f.threshold, 0, [], f.outside_claim)
                found = merged[key]
                found.records += f.records
                found.threshold = max(found.threshold, f.threshold)
                found.worst = sorted(found.worst + f.worst, key=_worst_key)[:self.worst]
        findings = sorted(merged.values(), key=_finding_order)
        return ScopeResult("all", tuple(v.info.seq for v in self.views), len(targets),
                           breached_total, findings, by_adversary, outside_total)

    # -- breaches ----------------------------------------------------------------------
    def _findings(self, requirements: list[Requirement], m: Measures
                  ) -> tuple[list[Finding], dict[str, np.ndarray]]:
        """One finding per (adversary, requirement, attribute) that some target breaks,
        and per adversary which targets it breaches at all."""
        # (adversary, requirement, attribute, level per target, breached per target)
        checks: list[tuple[str, Requirement, str | None, np.ndarray, np.ndarray]] = []
        pinned = Requirement(PINNED, "distinct", 2.0)
        for adversary, cand in (("qi", m.candidates_qi), ("linkage", m.candidates_linkage)):
            for r in requirements:
                if r.measure == "candidates":
                    checks.append((adversary, r, None, cand, cand < r.threshold))
            for attr in self.attributes:
                d, dp, s = m.linkage(attr) if adversary == "linkage" else m.qi(attr)
                consistent = d >= 1  # an empty intersection reveals nothing
                for r in requirements:
                    if r.attribute is not None and r.attribute != attr:
                        continue
                    if r.measure in ("distinct", "distinct_present"):
                        level = dp if r.measure == "distinct_present" else d
                        checks.append((adversary, r, attr, level,
                                       consistent & (level < r.threshold)))
                    elif r.measure == "range" and self.index.numeric[attr]:
                        checks.append((adversary, r, attr, s,
                                       consistent & ~np.isnan(s) & (s < r.threshold)))
                # a class already homogeneous in one release is no cross-release disclosure
                checks.append((adversary, pinned, attr, d, (d == 1) & ~m.homogeneous[attr]))
        breached = {a: np.zeros(len(m.targets), dtype=bool) for a in ADVERSARIES}
        findings = []
        for adversary, r, attr, level, mask in checks:
            if mask.any():
                breached[adversary] |= mask
                findings.append(Finding(adversary, r.model, r.measure, attr, r.threshold,
                                        int(mask.sum()), self._worst(mask, level, attr, m)))
        return sorted(findings, key=_finding_order), breached

    def _worst(self, mask: np.ndarray, level: np.ndarray, attr: str | None,
               m: Measures) -> list[dict[str, object]]:
        """The most exposed records of a finding: lowest level first."""
        idx = np.flatnonzero(mask)
        chosen = idx[np.lexsort((idx, np.nan_to_num(level[idx], nan=np.inf)))][:self.worst]
        seqs = [str(self.views[i].info.seq) for i in m.releases]
        out = []
        for t in chosen:
            tup = m.tuple_of[t]
            classes = m.tuple_classes[:, tup]
            case: dict[str, object] = {
                "record": bytes(self.index.pseudonyms[int(m.targets[t])]).hex(),
                "level": _number(level[t]),
                "classes": dict(zip(seqs, map(int, classes), strict=True)),
                "class_sizes": {s: int(self.views[i].sizes[c])
                                for s, i, c in zip(seqs, m.releases, classes, strict=True)},
                "candidates_linkage": int(m.candidates_linkage[t]),
                "candidates_qi": _number(m.candidates_qi[t]),
            }
            fake = {s: int(self.views[i].counterfeits[c])
                    for s, i, c in zip(seqs, m.releases, classes, strict=True)}
            if any(fake.values()):
                case["class_counterfeits"] = fake
            for a in self.attributes if attr is None else [attr]:
                offsets, values = m.entries[a]
                names = self.index.value_names[a][values[offsets[tup]:offsets[tup + 1]]]
                case[f"values[{a}]"] = [_plain(v) for v in names[:_N_VALUES_SHOWN]]
                span = m.span(a)[t]
                if not math.isnan(span):
                    case[f"range[{a}]"] = _number(span)
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
