"""Model text: the canonical short form every model writes (``spec``) reads back into the
same model, options after the numbers, m-uniqueness's keys, and the errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonkit
from anonkit import checker
from anonkit.errors import InputError
from anonkit.models import (
    MODEL_SYNTAX,
    BetaLikeness,
    Classes,
    DeltaDisclosure,
    DistinctLDiversity,
    EnhancedBetaLikeness,
    EntropyLDiversity,
    KAnonymity,
    KEAnonymity,
    MUniqueness,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
    parse_model,
)
from anonkit.models.risk import DeltaPresence, IndividualRiskModel, KMap, PopulationUniquenessModel
from anonkit.models.text import MODEL_KEYS, TEXT_MODELS

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

WHOLE = st.integers(1, 10**15)
POSITIVE = st.floats(min_value=0.0, exclude_min=True, allow_nan=False, allow_infinity=False)
NON_NEGATIVE = st.floats(min_value=0.0, allow_nan=False, allow_infinity=False)

#: per model, models of it with valid random parameters
STRATEGIES: dict[type[PrivacyModel], st.SearchStrategy[PrivacyModel]] = {
    KAnonymity: st.builds(KAnonymity, WHOLE),
    DistinctLDiversity: st.builds(DistinctLDiversity, WHOLE),
    EntropyLDiversity: st.builds(EntropyLDiversity,
                                 st.floats(1.0, allow_nan=False, allow_infinity=False)),
    RecursiveCLDiversity: st.builds(RecursiveCLDiversity, POSITIVE, WHOLE),
    TCloseness: st.builds(TCloseness, st.floats(0.0, 1.0),
                          st.sampled_from(["auto", "equal", "ordered", "hierarchical"])),
    DeltaDisclosure: st.builds(DeltaDisclosure, POSITIVE, st.none(),
                               st.sampled_from(["ignore", "fail"])),
    BetaLikeness: st.builds(BetaLikeness, POSITIVE),
    EnhancedBetaLikeness: st.builds(EnhancedBetaLikeness, POSITIVE),
    KEAnonymity: st.builds(KEAnonymity, WHOLE, NON_NEGATIVE),
    MUniqueness: st.builds(MUniqueness, WHOLE),
    PopulationUniquenessModel: st.builds(PopulationUniquenessModel, st.floats(0.0, 1.0),
                                         st.sampled_from(["dankar", "pitman", "zayatz",
                                                          "snb"])),
    KMap: st.builds(KMap, WHOLE, st.sampled_from(["poisson", "zero-truncated-poisson"])),
    DeltaPresence: st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)).map(
        lambda bounds: DeltaPresence(min(bounds), max(bounds))),
    IndividualRiskModel: st.builds(IndividualRiskModel, st.floats(0.0, 1.0)),
}
MODELS = st.one_of(*STRATEGIES.values())


def test_the_strategies_cover_every_model() -> None:
    assert set(STRATEGIES) == set(TEXT_MODELS)


@SETTINGS
@given(model=MODELS)
def test_spec_round_trips(model: PrivacyModel) -> None:
    text = model.spec()
    back = parse_model(text)
    assert type(back) is type(model)
    assert back.parameters == model.parameters
    assert back.spec() == text
    # canonical: one of the model's own keys, no spaces
    assert text.partition("=")[0] in type(model).text_keys and " " not in text


@pytest.mark.parametrize("model, text", [
    (KAnonymity(5), "k=5"),
    (DistinctLDiversity(3), "l=3"),
    (EntropyLDiversity(2.5), "entropy-l=2.5"),
    (EntropyLDiversity(3.0), "entropy-l=3"),
    (RecursiveCLDiversity(3, 2), "recursive-cl=3,2"),
    (RecursiveCLDiversity(0.1 + 0.2, 2), "recursive-cl=0.30000000000000004,2"),
    (TCloseness(0.2), "t=0.2"),
    (TCloseness(0.12345678, "ordered"), "t-ordered=0.12345678"),
    (TCloseness(1e-7, "hierarchical"), "t-hierarchical=1e-07"),
    (DeltaDisclosure(1.5), "delta=1.5"),
    (DeltaDisclosure(1.5, absent_values="fail"), "delta=1.5,absent=fail"),
    (BetaLikeness(0.5), "beta=0.5"),
    (EnhancedBetaLikeness(0.5), "enhanced-beta=0.5"),
    (KEAnonymity(3, 2000), "ke=3,2000"),
    (KEAnonymity(2, 1e9), "ke=2,1000000000"),
    (KEAnonymity(2, 5e-324), "ke=2,5e-324"),
    (MUniqueness(4), "m=4"),
])
def test_spec_known_answers(model: PrivacyModel, text: str) -> None:
    assert model.spec() == text
    assert parse_model(text).parameters == model.parameters


def test_spec_needs_a_model_text() -> None:
    class Custom(KAnonymity):
        text_keys = ()

    with pytest.raises(InputError, match="Custom has no model text"):
        Custom(2).spec()


# -- options -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, absent", [
    ("delta=1.5", "ignore"),
    ("delta=1.5,absent=fail", "fail"),
    ("delta=1.5,absent=ignore", "ignore"),
    ("Delta = 1.5 , Absent = FAIL", "fail"),
    ("δ=1.5,absent=fail", "fail"),
])
def test_delta_absent_option(text: str, absent: str) -> None:
    model = parse_model(text, "disease")
    assert isinstance(model, DeltaDisclosure) and model.absent_values == absent
    assert model.delta == 1.5 and model.attribute == "disease"


def test_delta_absent_option_is_checked() -> None:
    # the literal reading: a class lacking a value of the table fails
    df = pd.DataFrame({"q": ["a", "a", "b", "b"], "s": ["x", "y", "x", "x"]})
    assert checker.check(df, "q", "s", "delta=1.5").passed
    report = checker.check(df, "q", "s", "delta=1.5,absent=fail")
    assert not report.passed and report.verdicts[0].failing_classes == 1
    assert "absent_values=fail" in str(report)


@pytest.mark.parametrize("text, message", [
    ("delta=1.5,absnt=fail",
     r"unknown option 'absnt' for δ-disclosure privacy; its options: absent=ignore\|fail"),
    ("k=5,absent=fail", "unknown option 'absent' for k-anonymity; it takes no options"),
    ("delta=1.5,absent=maybe", "absent must be one of ignore, fail; got 'maybe'"),
    ("delta=1.5,absent=", "absent must be one of ignore, fail; got ''"),
    ("delta=1.5,absent=fail,absent=ignore", "option 'absent' is given twice"),
    ("delta=absent=fail,1.5", "'1.5' follows an option; write the numbers first"),
    ("delta=absent=fail", r"delta takes one number \(delta\)"),
    ("recursive-cl=3,absent=fail", r"takes two numbers separated by a comma \(c, l\)"),
    ("m=4,5", r"m takes one number \(m\)"),
])
def test_option_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_model(text)


# -- m-uniqueness and the key table --------------------------------------------------------

@pytest.mark.parametrize("text", ["m=4", "m-unique=4", "M_Unique = 4"])
def test_m_uniqueness_keys(text: str) -> None:
    model = parse_model(text, "disease")
    assert type(model) is MUniqueness and model.parameters == {"m": 4}
    assert model.attribute == "disease"


@pytest.mark.parametrize("text, message", [
    ("m=0", "m must be a whole number >= 1"),
    ("m=2.5", "m must be a whole number"),
    # a whole number is written as one, in a model text as on the command line (-m 4.0)
    ("m=4.0", "m must be a whole number >= 1, got 4.0"),
    ("k=1e1", "k must be a whole number >= 1, got 10.0"),
    ("m=", "'' is not a number"),
])
def test_m_uniqueness_text_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_model(text)


def test_m_uniqueness_checked_from_text() -> None:
    # classes {x, y, x, y} (shares of 1/2, but x repeats), {x, y, z} (distinct)
    df = pd.DataFrame({"q": list("aaaabbb"), "s": list("xyxyxyz")})
    report = checker.check(df, "q", "s", ["m=2"])
    assert not report.passed and report.verdicts[0].failing_classes == 1
    assert report.verdicts[0].measured == 0 and report.verdicts[0].worst_class == 0
    assert checker.check(df[df.q == "b"], "q", "s", ["m=3"]).passed


def test_every_key_names_its_model_and_the_syntax_lists_them() -> None:
    # no key names two models
    assert len(MODEL_KEYS) == sum(len(cls.text_keys) for cls in TEXT_MODELS)
    for key, cls in MODEL_KEYS.items():
        numbers = ",".join("1" for _ in cls.text_numbers)
        assert type(parse_model(f"{key}={numbers}")) is cls, key
    for cls in TEXT_MODELS:
        assert f"{cls.text_keys[0]}=" in MODEL_SYNTAX, cls
    assert "absent=fail" in MODEL_SYNTAX


def test_parse_model_is_importable_where_it_was() -> None:
    assert checker.parse_model is parse_model and anonkit.parse_model is parse_model
    assert checker.MODEL_SYNTAX is MODEL_SYNTAX


def test_parsed_models_evaluate_like_constructed_ones() -> None:
    rng = np.random.default_rng(3)
    classes = Classes(rng.integers(0, 4, 60), 4)
    for text in ("k=10", "k=16"):
        model = parse_model(text)
        assert model.holds(classes).tolist() == KAnonymity(
            int(text[2:])).holds(classes).tolist()
