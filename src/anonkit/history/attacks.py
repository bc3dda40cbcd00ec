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
    propagation over these sums (:class:`~anonkit.history.knowledge.Accumulated`, release
    after release) rules out the values no consistent assignment can give the target's
    atom -- e.g. when the other atoms of a class must use up its flu. It is sound (never
    rules out a possible value) but not complete. Its candidate count is
    ``sum over v in the intersection of min_i count_i(v)``.

``linkage`` -- *additionally links rows across releases* (worst case: a persistent
    pseudonym on every row, here the history's own HMAC pseudonym). The candidates are then
    exactly the records that shared the target's class in every release (the *cell*). A
    release that carries values on rows shows each linked person's value, so the target's
    values are exactly its cell's: the history keeps every record's released value for
    this, encrypted under the history's secret (see
    :data:`anonkit.history.schema.record_values_table`: a stolen history without the secret
    reveals nothing of them). A person whose rows show different values is no candidate for
    a value that does not change. Over permuted releases alone it links a person to groups,
    not values: it knows what the qi adversary deduces. A migrated history without recorded
    values falls back to a bound: at most as many values as candidates.

A single release that already left a record one value (a homogeneous class, which e.g.
k-anonymity allows) is no *cross-release* disclosure and is not reported as one.

A record is *breached* (over all the releases that contain it, or in a pair of releases)
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
the scope carries values on rows (see :class:`anonkit.history.knowledge.Measures`).

The audit judges every record over all the releases that contain it (the tightest
intersection: a record breached in any pair of its releases is breached there too), from
the knowledge the history keeps after every publish (:mod:`anonkit.history.knowledge`):
it reads one blob, however many releases there are. The publish-time gate is the same
judgement, of the records of the release about to be published, after adding it to that
knowledge: its cost grows with the release's records, not with the history. Each pair of
releases on its own is audited on request (``pairs=True``, ``--pairs``), from the pair's
two releases: that costs the square of the number of releases, and adds detail, not
breaches.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anonkit._util.numbers import json_number
from anonkit.errors import HistoryError
from anonkit.history.intersection import intersection_scopes
from anonkit.history.knowledge.engine import Accumulated, Measures, _measure, fold
from anonkit.history.knowledge.state import accumulated
from anonkit.history.knowledge.view import cell_members, sorted_values
from anonkit.history.possible import (
    EXACT_SECONDS,
    IMPOSSIBLE,
    POSSIBLE,
    entry_status,
    settle,
    structure,
)
from anonkit.history.records import ReleaseInfo, ReleaseView
from anonkit.history.requirements import Requirement, exact_only_models, requirements_of
from anonkit.history.store import HistoryStore

ADVERSARIES = {
    "qi": "knows everyone's quasi-identifiers, so every record's class or absence in every "
          "release (who joined and who left); cannot link rows across releases",
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


#: the measures an explicit threshold (``-k``, ``-l``, ``-e``) replaces
_OVERRIDES = {"candidates": ("candidates",), "distinct": ("distinct", "distinct_present"),
              "range": ("range",)}


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
    #: an exact deduction (the values the adversary cannot rule out fail); else *not ruled
    #: out* (the values proved possible fail, and nothing decided the rest)
    proved: bool = True

    @property
    def certainty(self) -> str:
        return "proved" if self.proved else "not ruled out"

    def describe(self) -> str:
        """E.g. ``k-anonymity (linkage adversary: candidates >= 5) [proved]``."""
        attr = f" on {self.attribute!r}" if self.attribute else ""
        need = ("one candidate value left" if self.model == PINNED
                else Requirement(self.model, self.measure, self.threshold).describe())
        outside = f" [{OUTSIDE_CLAIM}]" if self.outside_claim else ""
        return f"{self.model}{attr} ({self.adversary} adversary: {need}) [{self.certainty}]" \
            f"{outside}"

    def to_dict(self) -> dict[str, object]:
        return {"adversary": self.adversary, "model": self.model, "measure": self.measure,
                "attribute": self.attribute, "threshold": self.threshold,
                "records": self.records, "proved": self.proved, "worst": self.worst,
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
    #: all-releases scope: per release number, (its records compared, breached)
    by_release: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: record ids (in the judged knowledge) of the breached records (not serialised)
    breached_records: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64),
                                         repr=False, compare=False)
    #: False: judged on the values left only, stopped at the first proof (the gate's
    #: shortcut): the findings not ruled out were not computed
    complete: bool = True
    #: adversary -> records it breaches in some proved finding
    proved_by: dict[str, int] = field(default_factory=dict)
    #: adversary -> records it breaches under a threat model that claims it (counted)
    counted_by: dict[str, int] = field(default_factory=dict)

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
                "records_proved_by_adversary": dict(self.proved_by),
                "records_counted_by_adversary": dict(self.counted_by),
                "records_breached_outside_claimed_threat_model": self.records_outside_claim,
                "by_release": {str(s): {"records_compared": c, "records_breached": b}
                               for s, (c, b) in self.by_release.items()},
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
    #: (:mod:`anonkit.history.intersection`; its breaches are the linkage adversary's too)
    intersections: list[Any] = field(default_factory=list)
    #: the releases published over the gate (``--allow-breach``): what their gate recorded
    overrides: list[dict[str, object]] = field(default_factory=list)

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
            "gate_overrides": list(self.overrides),
        }

    def summary(self) -> str:
        """The first line (``audit of 'D', releases 1, 2: ...``, which scripts read), one
        verdict per adversary, then every scope's findings."""
        lines = [f"audit of {self.dataset!r}, releases {', '.join(map(str, self.releases))}: "
                 + (f"{self.records_breached} records breached" if self.breached
                    else "no breach found") + self._outside_note()]
        lines += [f"  {verdict.sentence()}" for verdict in self.verdicts()]
        lines += [f"  {override_text(o)}" for o in self.overrides]
        if len(self.releases) < 2:
            lines.append("  (fewer than two releases: nothing to intersect)")
        lines += [f"  {model}: {EXACT_ONLY}" for model in self.exact_only]
        for scope in self.scopes():
            compared = "in either" if scope.kind == "pair" else "in any release"
            outside = (f" (and {scope.records_outside_claim} only by adversaries "
                       f"{OUTSIDE_CLAIM})" if scope.records_outside_claim else "")
            lines.append(f"  {scope.name}: {scope.records_compared} records {compared}, "
                         f"{scope.records_breached} breached{outside}")
            for f in scope.findings:
                lines.append(f"    {f.records:>8} {f.describe()}")
        lines += [f"  {s.describe()}" for s in self.intersections]
        return "\n".join(lines)

    def scopes(self) -> list[ScopeResult]:
        """The pairs, then all releases (the order of the summary and the HTML report)."""
        return [*self.pairs, *([self.overall] if self.overall else [])]

    def verdicts(self) -> list[AdversaryVerdict]:
        """Per adversary, what it exposes over all releases (a record breached in a pair
        of its releases is exposed there too)."""
        return [_verdict(adversary, self.overall) for adversary in ADVERSARIES]

    def _outside_note(self) -> str:
        """Findings outside the claimed threat models are shown but not counted: said
        where the count is, so that "no breach found" never stands over them unqualified."""
        if self.records_outside_claim:
            return (f"; {self.records_outside_claim} more records only by adversaries "
                    f"{OUTSIDE_CLAIM}s (shown, not counted)")
        if any(f.outside_claim for scope in self.scopes() for f in scope.findings):
            return f"; findings by adversaries {OUTSIDE_CLAIM}s shown, not counted"
        return ""


#: each adversary in a few words, for its verdict (ADVERSARIES describes it in full)
_IN_A_FEW_WORDS = {"qi": "knows everyone's quasi-identifiers and who joined or left",
                   "linkage": "also links a person's rows across releases"}


@dataclass(frozen=True)
class AdversaryVerdict:
    """What one adversary exposes over all releases."""

    adversary: str
    exposed: int  # distinct records, counted or not
    counted: int  # of them, judged under a threat model that claims the adversary
    proved: int  # of them, in at least one proved finding

    @property
    def breach(self) -> bool:
        """Some records count as breached (not only shown, outside the claim)."""
        return self.counted > 0

    def sentence(self) -> str:
        """E.g. ``qi adversary (...): 12 records exposed, 10 proved and 2 not ruled out.``"""
        few = _IN_A_FEW_WORDS.get(self.adversary, ADVERSARIES.get(self.adversary, ""))
        claimed_by_all = all(self.adversary in c for c in CLAIMED_ADVERSARIES.values())
        claim = "; every threat model claims to resist it" if claimed_by_all else ""
        head = f"{self.adversary} adversary ({few}{claim}): "
        if not self.exposed:
            return head + "no record exposed."
        proof = _proof_text(self.exposed, self.proved)
        unclaiming = " or ".join(model for model, claimed in CLAIMED_ADVERSARIES.items()
                                 if self.adversary not in claimed)
        models = f" ({unclaiming})" if unclaiming else ""
        if not self.breach:
            return (head + f"{OUTSIDE_CLAIM}{models}; {records_text(self.exposed)} would be "
                    f"exposed, {proof}, shown for information, not counted.")
        if self.counted == self.exposed:
            return head + f"{records_text(self.exposed)} exposed, {proof}."
        return (head + f"{records_text(self.exposed)} exposed, {proof}; "
                f"{self.exposed - self.counted:,} of them only in releases whose threat "
                f"model does not claim it{models}: shown, not counted.")


def _verdict(adversary: str, scope: ScopeResult | None) -> AdversaryVerdict:
    if scope is None:
        return AdversaryVerdict(adversary, 0, 0, 0)
    return AdversaryVerdict(adversary, scope.breached_by.get(adversary, 0),
                            scope.counted_by.get(adversary, 0),
                            scope.proved_by.get(adversary, 0))


def _proof_text(exposed: int, proved: int) -> str:
    if proved == exposed:
        return "proved" if exposed == 1 else "all proved"
    if proved == 0:
        return "not ruled out" if exposed == 1 else "none proved, all not ruled out"
    return f"{proved:,} proved and {exposed - proved:,} not ruled out"


def override_text(override: dict[str, object]) -> str:
    """E.g. ``release 2: published over the gate (--allow-breach) at ...: 1 record newly
    exposed (qi adversary)``."""
    who = ", ".join(f"{a} adversary" for a in override.get("adversaries") or {})  # type: ignore[union-attr]
    n = override.get("new_breaches", 0)
    return (f"release {override.get('seq')}: published over the gate (--allow-breach) at "
            f"{override.get('at')}: {records_text(int(n))} newly exposed"  # type: ignore[call-overload]
            + (f" ({who})" if who else ""))


def records_text(n: int) -> str:
    """``1 record``, ``1,234 records``."""
    return "1 record" if n == 1 else f"{n:,} records"


# -- the audit ---------------------------------------------------------------------------


class CrossReleaseBreachError(HistoryError):
    """A release was refused: together with earlier releases it would breach records.
    ``report``: the gate's findings, ``details``: an engine's (both for ``--json``; the
    message stays one line)."""

    exit_code = 3

    def __init__(self, message: str, report: AuditReport | None = None,
                 details: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.report = report
        #: what a sequential engine found (input row numbers, never keys or values)
        self.details = details or {}


def audit(store: HistoryStore, dataset: str, *, k: float | None = None,
          l: float | None = None, e: float | None = None,  # noqa: E741
          focus: int | None = None, worst: int = _N_WORST, pairs: bool = False,
          exact_seconds: float = EXACT_SECONDS) -> AuditReport:
    """Audit every record of ``dataset`` over all the releases that contain it, from the
    knowledge the history keeps (see the module); with ``focus``, only the records of
    release number ``focus``. ``pairs``: also every pair of releases on its own (each pair
    is intersected from its two releases: the cost grows with the square of the number of
    releases, and a record breached in a pair is breached over all its releases too).
    ``exact_seconds``: the time the exact check of undecided records may take (see
    :func:`judge`)."""
    store.refuse_if_tampered(f"the audit of {dataset!r}")
    infos = store.releases(dataset)  # HistoryError for an unknown dataset
    if focus is not None and focus not in {i.seq for i in infos}:
        store.release(dataset, focus)  # the error naming the releases there are
    acc = accumulated(store, dataset)
    # labels: for the row-wise intersection of released ranges (the audit proper reads none)
    views = [store.load(info, labels=True) for info in infos]
    report = judge(acc, k=k, l=l, e=e, focus=focus, worst=worst, exact_seconds=exact_seconds)
    report.overrides = [{"seq": info.seq, **(info.gate or {})} for info in infos
                        if info.gate_overridden]
    if pairs:
        report.pairs = pair_scopes(views, k=k, l=l, e=e, focus=focus, worst=worst,
                                   exact_seconds=exact_seconds)
    report.intersections = intersection_scopes(views, k)
    return report


def audit_views(views: Sequence[ReleaseView], *, k: float | None = None,
                l: float | None = None, e: float | None = None,  # noqa: E741
                focus: int | None = None, worst: int = _N_WORST, pairs: bool = False,
                exact_seconds: float = EXACT_SECONDS) -> AuditReport:
    """The audit of releases already loaded (in publication order); ``focus``, ``pairs``
    and ``exact_seconds`` as in :func:`audit`."""
    views = sorted(views, key=lambda v: v.info.seq)
    report = judge(fold(views), k=k, l=l, e=e, focus=focus, worst=worst,
                   exact_seconds=exact_seconds)
    if pairs:
        report.pairs = pair_scopes(views, k=k, l=l, e=e, focus=focus, worst=worst,
                                   exact_seconds=exact_seconds)
    return report


def judge(acc: Accumulated, *, k: float | None = None, l: float | None = None,  # noqa: E741
          e: float | None = None, focus: int | None = None, worst: int = _N_WORST,
          exact_seconds: float = EXACT_SECONDS, settle_when_proved: bool = True,
          stop_at_proof: np.ndarray | None = None) -> AuditReport:
    """The audit of a knowledge: every record of every release (with ``focus``: the
    records of release number ``focus``), over all the releases that contain it -- a
    record in one release too, since what is deduced about the others can pin it down (the
    difference of two releases discloses whoever joined or left). The publish-time gate is
    this judgement of every record, after adding the release about to be published.

    Undecided records (breached on the values proved possible, not on those left) are
    settled exactly where small enough (:func:`anonkit.history.possible.settle`, at most
    ``exact_seconds``); ``settle_when_proved=False`` skips that when a breach is already
    proved (the gate refuses either way). ``stop_at_proof`` (a mask over the records, e.g.
    those not already accepted): judge on the values left first, and stop there when a
    record of the mask is proved breached -- the report then holds the proved findings
    only (``ScopeResult.complete`` is False), which is all a refusal needs."""
    given = _given(k, l, e)
    infos = [_info(r) for r in acc.releases]
    seqs = [i.seq for i in infos]
    dataset = infos[0].dataset if infos else ""
    wanted = np.ones(acc.n_records, dtype=bool)
    if focus is not None:
        j = seqs.index(focus)
        wanted[:] = False
        wanted[acc.in_release(j)] = True
    targets = np.flatnonzero(wanted)
    overall = (_judge(acc, infos, given, worst, targets, "all", tuple(seqs),
                      exact_seconds=exact_seconds, settle_when_proved=settle_when_proved,
                      stop_at_proof=stop_at_proof)
               if len(seqs) >= 2 else None)
    requirements = _merge([r for i in infos for r in _requirements(i, given)])
    exact_only: list[str] = []
    for info in infos:
        exact_only += [m for m in exact_only_models(info) if m not in exact_only]
    breached = overall.records_breached if overall else 0
    outside = overall.records_outside_claim if overall else 0
    return AuditReport(dataset, seqs, requirements, [], overall, breached, exact_only, outside)


def pair_scopes(views: Sequence[ReleaseView], *, k: float | None = None,
                l: float | None = None, e: float | None = None,  # noqa: E741
                focus: int | None = None, worst: int = _N_WORST,
                exact_seconds: float = EXACT_SECONDS) -> list[ScopeResult]:
    """Every pair of releases on its own (with ``focus``: the pairs with that release)."""
    views = sorted(views, key=lambda v: v.info.seq)
    given = _given(k, l, e)
    out = []
    for a in range(len(views)):
        for b in range(a + 1, len(views)):
            if focus is not None and focus not in (views[a].info.seq, views[b].info.seq):
                continue
            acc = fold([views[a], views[b]])
            out.append(_judge(acc, [views[a].info, views[b].info], given, worst,
                              np.arange(acc.n_records), "pair",
                              (views[a].info.seq, views[b].info.seq),
                              exact_seconds=exact_seconds))
    return out


def _given(k: float | None, l: float | None, e: float | None  # noqa: E741
           ) -> list[Requirement]:
    overrides = [Requirement("k-anonymity", "candidates", k) if k is not None else None,
                 Requirement("distinct l-diversity", "distinct", l) if l is not None else None,
                 Requirement("(k,e)-anonymity", "range", e) if e is not None else None]
    return [r for r in overrides if r is not None]


def _info(release: object) -> ReleaseInfo:
    info = getattr(release, "info", None)
    if info is None:
        raise HistoryError("the knowledge was read without its releases' records; "
                           "read it with anonkit.history.knowledge.accumulated")
    return info


def _requirements(info: ReleaseInfo, given: list[Requirement]) -> list[Requirement]:
    """A release's promises; an explicit threshold replaces those of its measure."""
    replaced = {m for r in given for m in _OVERRIDES[r.measure]}
    return [r for r in requirements_of(info) if r.measure not in replaced] + given


def _claims(info: ReleaseInfo) -> int:
    """The adversaries a release claims to resist, as bits in ADVERSARIES' order (a threat
    model that names none claims them all)."""
    claimed = CLAIMED_ADVERSARIES.get(info.threat_model, tuple(ADVERSARIES))
    return sum(1 << i for i, a in enumerate(ADVERSARIES) if a in claimed)


@dataclass
class _Check:
    """One test of the targets: ``level`` of what the adversary cannot rule out, and
    ``possible``, of what is proved possible; each fails below ``threshold``."""

    adversary: str
    model: str
    measure: str
    attribute: str | None
    level: np.ndarray
    possible: np.ndarray
    threshold: np.ndarray
    proved: np.ndarray  # fails on what is left: an exact deduction
    breach: np.ndarray  # fails on what is proved possible (includes ``proved``)


def _checks(acc: Accumulated, m: Measures, keys: list[tuple[str, str, str | None]],
            threshold: np.ndarray) -> list[_Check]:
    n = len(m.targets)
    several = m.n_releases >= 2  # a record's own class is no cross-release identity
    out: list[_Check] = []
    for adversary in ADVERSARIES:
        cand = m.candidates_qi if adversary == "qi" else m.candidates_linkage
        for c, (model, measure, _attr) in enumerate(keys):
            if measure == "candidates":
                fail = several & (cand < threshold[:, c])
                out.append(_Check(adversary, model, measure, None, cand, cand,
                                  threshold[:, c], fail, fail))
        for attr in acc.attributes:
            left = m.linkage(attr) if adversary == "linkage" else m.qi(attr)
            proved = (m.linkage(attr, proved=True) if adversary == "linkage"
                      else m.qi(attr, proved=True))
            d, dp, span = left
            pd_, pdp, pspan = proved
            consistent = d >= 1  # an empty intersection reveals nothing
            for c, (model, measure, attribute) in enumerate(keys):
                if attribute is not None and attribute != attr:
                    continue
                t = threshold[:, c]
                if measure in ("distinct", "distinct_present"):
                    level, possible = (dp, pdp) if measure == "distinct_present" else (d, pd_)
                    out.append(_Check(adversary, model, measure, attr, level, possible, t,
                                      consistent & (level < t), consistent & (possible < t)))
                elif measure == "range" and acc.values[attr].numeric:
                    known = consistent & ~np.isnan(span)
                    out.append(_Check(adversary, model, measure, attr, span, pspan, t,
                                      known & (span < t),
                                      known & (np.nan_to_num(pspan, nan=0.0) < t)))
            # a class already homogeneous in one release is no cross-release disclosure
            open_ = consistent & ~m.homogeneous[attr]
            out.append(_Check(adversary, PINNED, "distinct", attr, d, pd_, np.full(n, 2.0),
                              open_ & (d == 1), open_ & (pd_ <= 1)))
    return out


def _judge(acc: Accumulated, infos: Sequence[ReleaseInfo], given: list[Requirement],
           worst: int, targets: np.ndarray, kind: str, seqs: tuple[int, ...], *,
           exact_seconds: float = EXACT_SECONDS, settle_when_proved: bool = True,
           stop_at_proof: np.ndarray | None = None) -> ScopeResult:
    """Judge ``targets`` over all their releases. Each record is held to the strictest
    requirement of the releases it is in, and judged by the adversaries one of them claims
    to resist (a scope of releases that all claim fewer shows the others' findings, marked
    outside the claimed threat model, without counting them). A finding is *proved* when
    the values the adversary cannot rule out already fail, else *not ruled out*: the values
    proved possible fail, and no exact check decided it in time."""
    owner, rel, _ = acc.memberships(targets)
    n = len(targets)
    keys: list[tuple[str, str, str | None]] = []
    per_release = [_requirements(i, given) for i in infos]
    for reqs in per_release:
        keys += [(r.model, r.measure, r.attribute) for r in reqs
                 if (r.model, r.measure, r.attribute) not in keys]
    table = np.full((len(infos), len(keys)), -np.inf)
    for i, reqs in enumerate(per_release):
        for r in reqs:
            c = keys.index((r.model, r.measure, r.attribute))
            table[i, c] = max(table[i, c], r.threshold)
    claims = np.array([_claims(i) for i in infos], dtype=np.int64)
    if n:
        first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        threshold = (np.maximum.reduceat(table[rel], first, axis=0) if keys
                     else np.zeros((n, 0)))
        judged_bits = np.bitwise_or.reduceat(claims[rel], first)
    else:
        threshold, judged_bits = np.zeros((0, len(keys))), np.zeros(0, dtype=np.int64)

    def proved_claimed(checks: list[_Check], among: np.ndarray) -> bool:
        return any((ch.proved & among & ((judged_bits & (
            1 << list(ADVERSARIES).index(ch.adversary))) != 0)).any() for ch in checks)

    complete = True
    if stop_at_proof is not None:
        m = _measure(acc, targets)  # the propagation's bound only
        checks = _checks(acc, m, keys, threshold)
        if proved_claimed(checks, stop_at_proof[targets]):
            complete = False
            for ch in checks:
                ch.breach = ch.proved
            # the values left, as if all were possible (for the worst cases' evidence)
            status = {a: np.where(acc.entries[a].high >= 1, POSSIBLE, IMPOSSIBLE)
                      .astype(np.int8) for a in acc.attributes}
    if complete:
        st = structure(acc)
        status = {a: entry_status(acc, a, st) for a in acc.attributes}
        # nothing is ruled out beyond the propagation yet: its values left are reused
        m = _measure(acc, targets, status, upper=m if stop_at_proof is not None else None)
        checks = _checks(acc, m, keys, threshold)
    undecided = np.zeros(n, dtype=bool)
    for ch in checks:
        undecided |= ch.breach & ~ch.proved
    if undecided.any() and exact_seconds > 0 and (
            settle_when_proved or not proved_claimed(checks, np.ones(n, dtype=bool))):
        deadline = time.monotonic() + exact_seconds
        atoms = np.unique(acc.atom[targets[undecided]])
        for attr in acc.attributes:
            status[attr] = settle(acc, attr, status[attr], atoms, st, deadline=deadline)
        m = _measure(acc, targets, status)
        checks = _checks(acc, m, keys, threshold)
    breached_by = {a: np.zeros(n, dtype=bool) for a in ADVERSARIES}
    proved_by = {a: np.zeros(n, dtype=bool) for a in ADVERSARIES}
    counted_by = {a: np.zeros(n, dtype=bool) for a in ADVERSARIES}
    breached, outside = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    findings = []
    for ch in checks:
        if not ch.breach.any():
            continue
        breached_by[ch.adversary] |= ch.breach
        proved_by[ch.adversary] |= ch.proved
        bit = 1 << list(ADVERSARIES).index(ch.adversary)
        judged = (judged_bits & bit) != 0
        counted_by[ch.adversary] |= ch.breach & judged
        for exact, mask, level in ((True, ch.proved, ch.level),
                                   (False, ch.breach & ~ch.proved, ch.possible)):
            for part, outside_claim in ((mask & judged, False), (mask & ~judged, True)):
                if part.any():
                    findings.append(Finding(
                        ch.adversary, ch.model, ch.measure, ch.attribute,
                        float(ch.threshold[part].max()), int(part.sum()),
                        _worst(acc, infos, m, status, part, level, ch.attribute, worst,
                               ch.adversary),
                        outside_claim, exact))
                    (outside if outside_claim else breached)[part] = True
    outside &= ~breached
    by_release: dict[int, tuple[int, int]] = {}
    if kind == "all" and n:
        compared = np.bincount(rel, minlength=len(infos))
        hit = np.bincount(rel, breached[owner].astype(np.int64), minlength=len(infos))
        by_release = {info.seq: (int(compared[i]), int(hit[i]))
                      for i, info in enumerate(infos)}
    return ScopeResult(kind, seqs, n, int(breached.sum()), sorted(findings, key=_finding_order),
                       {a: int(mask.sum()) for a, mask in breached_by.items()},
                       int(outside.sum()), by_release,
                       breached_records=m.targets[breached], complete=complete,
                       proved_by={a: int(x.sum()) for a, x in proved_by.items()},
                       counted_by={a: int(x.sum()) for a, x in counted_by.items()})


def _worst(acc: Accumulated, infos: Sequence[ReleaseInfo], m: Measures,
           status: dict[str, np.ndarray], mask: np.ndarray, level: np.ndarray,
           attr: str | None, worst: int, adversary: str) -> list[dict[str, object]]:
    """The most exposed records of a finding: lowest level first, with that adversary's
    own evidence (the qi adversary's values left and proved possible; the linkage
    adversary's linked records' values)."""
    idx = np.flatnonzero(mask)
    chosen = idx[np.lexsort((idx, np.nan_to_num(level[idx], nan=np.inf)))][:worst]
    owner, rel, klass = acc.memberships(m.targets[chosen])
    out = []
    for t_pos, t in enumerate(chosen):
        mine = owner == t_pos
        seqs = [str(infos[i].seq) for i in rel[mine]]
        releases = [acc.releases[i] for i in rel[mine]]
        classes = klass[mine]
        record = int(m.targets[t])
        case: dict[str, object] = {
            "record": acc.pseudonym(record).hex(),
            "level": json_number(level[t]),
            "releases": [int(s) for s in seqs],
            "classes": dict(zip(seqs, map(int, classes), strict=True)),
            "class_sizes": {s: int(r.sizes[c]) for s, r, c in zip(seqs, releases, classes,
                                                                  strict=True)},
        }
        if adversary == "linkage":
            case["candidates_linkage"] = int(m.candidates_linkage[t])
        else:
            case["candidates_qi"] = json_number(m.candidates_qi[t])
        fake = {s: int(r.counterfeits[c]) for s, r, c in zip(seqs, releases, classes,
                                                             strict=True)}
        if any(fake.values()):
            case["class_counterfeits"] = fake
        for a in acc.attributes if attr is None else [attr]:
            if adversary == "qi" or not m.row_values[t]:
                case[f"values[{a}]"] = _shown(acc, a, _atom_values(acc, a, status[a], record,
                                                                   IMPOSSIBLE))
                case[f"proved_possible[{a}]"] = _shown(acc, a, _atom_values(
                    acc, a, status[a], record, POSSIBLE))
            else:
                case[f"values[{a}]"] = _shown(acc, a, _linked_values(acc, a, record))
        out.append(case)
    return out


def _atom_values(acc: Accumulated, attr: str, status: np.ndarray, record: int,
                 at_least: int) -> np.ndarray:
    """Value ids of the record's atom whose status is above ``at_least`` (IMPOSSIBLE: the
    values not ruled out) or equal to it (POSSIBLE: those proved possible)."""
    e = acc.entries[attr]
    a = acc.atom[record]
    lo, hi = np.searchsorted(e.atom, [a, a + 1])
    code = status[lo:hi]
    keep = code > at_least if at_least == IMPOSSIBLE else code == at_least
    return e.value[lo:hi][keep]


def _linked_values(acc: Accumulated, attr: str, record: int) -> np.ndarray:
    """Value ids the linkage adversary sees on the rows linked to the record's."""
    members = cell_members(acc, record)
    values = acc.mem_value[attr][np.searchsorted(acc.mem_record, members)]
    return np.unique(values[values >= 0])


def _shown(acc: Accumulated, attr: str, ids: np.ndarray) -> list[object]:
    """At most _N_VALUES_SHOWN values, in the knowledge's one order (missing last)."""
    return [json_number(v) for v in sorted_values(acc, attr, ids)[:_N_VALUES_SHOWN]]


def _finding_order(f: Finding) -> tuple[int, str, str, str, bool, bool]:
    return (0 if f.adversary == "qi" else 1, f.model, f.measure, f.attribute or "",
            f.outside_claim, not f.proved)
