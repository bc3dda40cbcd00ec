"""Issue 22, item 23: a refused publish advises what fits the method just used and the
table's columns -- never the refused method again, never a method the columns cannot feed."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from anonkit.history import HistoryStore, PublishRequest, publish
from anonkit.history.attacks import CrossReleaseBreachError
from anonkit.history.publish import refusal_advice
from history_helpers import churned_versions


def columns(sensitive: str | None, qi_kinds: tuple[str, ...] = ("numeric",)
            ) -> dict[str, dict[str, str]]:
    out = {f"q{i}": {"role": "quasi_identifier", "kind": kind}
           for i, kind in enumerate(qi_kinds)}
    out["id"] = {"role": "identifier", "kind": ""}
    if sensitive is not None:
        out["s"] = {"role": "sensitive", "kind": sensitive}
    return out


@pytest.mark.parametrize(("method", "cols", "advised", "not_advised"), [
    # a one-shot method: the sequential methods the columns can feed
    ("mondrian", columns("categorical", ("numeric", "categorical")), ["m-invariance"],
     ["ke", "stream-tree"]),
    ("mondrian", columns("numeric", ("numeric", "numeric")), ["m-invariance", "ke"],
     ["stream-tree"]),
    ("alphabetic", columns(None), ["stream-tree"], ["m-invariance", "ke"]),
    # a sequential method: never itself again
    ("m-invariance", columns("categorical", ("numeric", "categorical")), [],
     ["m-invariance", "ke", "stream-tree"]),
    ("m-invariance", columns("numeric", ("numeric", "numeric")), ["ke"],
     ["m-invariance", "stream-tree"]),
    ("stream-tree", columns(None), [], ["m-invariance", "ke", "stream-tree"]),
    ("ke", columns("numeric", ("numeric", "numeric")), ["m-invariance"], ["ke"]),
])
def test_the_advice_fits_the_method_and_the_columns(
        method: str, cols: dict[str, dict[str, str]], advised: list[str],
        not_advised: list[str]) -> None:
    advice = refusal_advice(method, cols)
    for name in advised:
        assert f"--method {name} " in advice, advice
    for name in not_advised:
        assert f"--method {name} " not in advice, advice
    assert "\n" not in advice
    assert advised or "--new-lineage" in advice  # nothing to switch to: a new dataset


def test_no_fitting_method_says_so() -> None:
    advice = refusal_advice("mondrian", columns(None, ("numeric", "categorical")))
    assert "--method" not in advice and "No sequential method fits" in advice


def test_a_refused_m_invariance_publish_does_not_advise_m_invariance(tmp_path: Path) -> None:
    # an m-invariance release after a Mondrian one: the gate refuses it; the one line must
    # not send the steward back to m-invariance, nor to (k,e) for a categorical attribute
    warnings.filterwarnings("ignore", message=".*history secret.*")
    v1, v2, _ = churned_versions(600, 3, churn=0.1, seed=6)

    def request(method: str, **options: object) -> PublishRequest:
        return PublishRequest(dataset="ward", key="pid", quasi_identifiers=["age", "zip", "sex"],
                              sensitive=["disease"], method=method, options=options)

    with HistoryStore.open(tmp_path / "h.db", create=True) as store:
        publish(store, v1, request("mondrian", k=5), tmp_path / "r1.csv")
        with pytest.raises(CrossReleaseBreachError) as refused:
            publish(store, v2, request("m-invariance", m=3, seed=1), tmp_path / "r2.csv")
    message = str(refused.value)
    assert "--method m-invariance" not in message and "--method ke" not in message, message
    assert "Re-running m-invariance will not help" in message
    assert not (tmp_path / "r2.csv").exists()
