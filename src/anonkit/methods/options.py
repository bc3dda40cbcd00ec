"""The typed options of the methods: one parser per kind of value, so an option is
checked the same way wherever it comes from.

The command line turns each :class:`Option` into a real option (``-k``, ``-m``,
``--strategy`` ...), the job file reads it under the same name, and Python callers pass it
as a keyword; all three go through :meth:`Option.parse`, so a value that is not what it
claims to be is refused the same way everywhere -- never rounded, never silently weakened
(``k=4.9``, ``k=true`` and ``k=abc`` are errors, not k = 4, 1 or a crash).

Privacy models given as options (``k``, ``l``, ``t``, ``models``) become model objects once
(:func:`anonkit.methods.models.models_from_options`): a threshold is never formatted and
parsed again, so ``t=0.12345678`` is enforced as exactly that. This module imports no
numpy: the command line declares every option before it reads a table.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from anonkit._util.numbers import SOURCES as SOURCES  # where an option value comes from
from anonkit._util.numbers import describe as _describe
from anonkit._util.numbers import whole_number as _whole_number
from anonkit._util.options import as_list
from anonkit.errors import InputError

# -- value parsers: (option name, value, source) -> typed value, or InputError ------------


def whole_number(minimum: int) -> Callable[[str, object, str], int]:
    def parse(name: str, value: object, source: str) -> int:
        return _whole_number(name, value, source, minimum)  # type: ignore[arg-type]

    parse.kind = f"whole number >= {minimum}"  # type: ignore[attr-defined]
    return parse


def real_number(low: float, low_open: bool = False) -> Callable[[str, object, str], float]:
    def parse(name: str, value: object, source: str) -> float:
        number: float | None = None
        if isinstance(value, str) and source == "cli":
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        elif isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        if number is None or not math.isfinite(number) or \
                (number <= low if low_open else number < low):
            raise InputError(f"{name} must be a number {bound}, got {_describe(value)}")
        return number

    parse.kind = f"number {'>' if low_open else '>='} {low:g}"  # type: ignore[attr-defined]
    return parse


def text(name: str, value: object, source: str) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise InputError(f"{name} must be a non-empty text, got {_describe(value)}")


text.kind = "text"  # type: ignore[attr-defined]


def boolean(name: str, value: object, source: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and source == "cli":
        text = value.strip().lower()
        if text in ("true", "yes", "1", "on"):
            return True
        if text in ("false", "no", "0", "off"):
            return False
    raise InputError(f"{name} must be true or false, got {_describe(value)}")


boolean.kind = "true or false"  # type: ignore[attr-defined]


def choice(*values: str) -> Callable[[str, object, str], str]:
    def parse(name: str, value: object, source: str) -> str:
        if isinstance(value, str) and value.strip() in values:
            return value.strip()
        raise InputError(f"{name} must be one of {', '.join(values)}; got {_describe(value)}")

    parse.kind = " | ".join(values)  # type: ignore[attr-defined]
    return parse


def column_values(name: str, value: object, source: str) -> dict[str, str]:
    """``col=VALUE`` pairs (command line, repeatable) or a TOML table of texts."""
    if isinstance(value, Mapping):
        bad = [k for k, v in value.items() if not isinstance(v, str)]
        if bad:
            raise InputError(f"{name}: the value for column {bad[0]!r} must be text, got "
                             f"{_describe(value[bad[0]])}")
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list | tuple) and source == "cli":
        out = {}
        for pair in value:
            column, sep, text = str(pair).partition("=")
            if not sep or not column.strip() or not text.strip():
                raise InputError(f"--{name} takes COLUMN=VALUE, got {pair!r}")
            out[column.strip()] = text.strip()
        return out
    raise InputError(f"{name} must be a table of column = value, got {_describe(value)}")


column_values.kind = "COLUMN=VALUE"  # type: ignore[attr-defined]


# -- options and methods ----------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One typed option of a method: its name (also the TOML key and Python keyword), its
    command-line flags, its parser, and its help."""

    name: str
    flags: tuple[str, ...]
    #: the parser, or ``"module:function"`` for one loaded on first use (the privacy
    #: models' parser needs numpy: declaring the options, as the command line does before
    #: it reads anything, must not)
    parse_value: Callable[[str, object, str], Any] | str
    help: str
    metavar: str = ""
    multiple: bool = False  # repeatable on the command line; values collect in a list
    switch: bool = False  # a command-line flag without value (sets True)
    #: what values it takes, for help (default: the parser's ``kind``)
    value_kind: str = ""
    #: it only means something when the release is published with a history (how a
    #: sequential method honours the earlier releases): not shown by ``anonymize --help``
    history_only: bool = False

    def parse(self, value: object, source: str) -> Any:
        parser = self.parse_value
        if isinstance(parser, str):
            module, _, function = parser.partition(":")
            parser = getattr(importlib.import_module(module), function)
        return parser(self.name, value, source)

    @property
    def kind(self) -> str:
        return self.value_kind or str(getattr(self.parse_value, "kind", ""))

    @property
    def flag(self) -> str:
        """The option's longest flag, for messages."""
        return max(self.flags, key=len)


K = Option("k", ("-k",), whole_number(1), "k-anonymity: every class has at least k rows.",
           metavar="INT")
L = Option("l", ("-l",), whole_number(1),
           "Distinct l-diversity: at least l distinct sensitive values per class (a whole "
           "number; entropy or recursive l-diversity via --model).", metavar="INT")
T = Option("t", ("-t",), real_number(0.0, low_open=True),
           "t-closeness: the EMD of every class to the whole table is at most t.",
           metavar="NUMBER")
MODELS = Option("models", ("--model",), "anonkit.methods.models:model_list",
                "A further privacy model (repeatable): entropy-l=2, recursive-cl=3,2, "
                "t-ordered=0.2, delta=1.5,absent=fail, beta=1, ke=3,2000, m=4, k-map=5, "
                "delta-presence=0.1,0.6, population-uniqueness=0.01, individual-risk=0.05 ...",
                metavar="MODEL", multiple=True, value_kind="MODEL")
GENERALIZATION = Option("generalization", ("--generalization",), column_values,
                        "COLUMN=FORM: range, set, hierarchy, prefix, mean or median "
                        "(repeatable).", metavar="COLUMN=FORM", multiple=True)
STRATEGY = Option("strategy", ("--strategy",), choice("widest", "entropy", "distinct",
                                                      "random"),
                  "How Mondrian chooses the cut dimension (default: widest).", metavar="NAME")
REMOVE_CUT = Option("remove_cut_dimension", ("--remove-cut-dimension",), boolean,
                    "A variant: a dimension once cut is not cut again below.",
                    switch=True)
SINGLE_DIMENSIONAL = Option("single_dimensional", ("--single-dimensional",), boolean,
                            "A variant: stop after the first cut (single-dimensional).",
                            switch=True)
ALLOW_MISSING = Option("allow_missing", ("--allow-missing",), boolean,
                       "Treat a missing QI value as a value of its own instead of refusing.",
                       switch=True)
SEED = Option("seed", ("--seed",), whole_number(0),
              "Seed for randomness, for tests and reproducible studies only: privacy "
              "randomness otherwise comes from the operating system and is never recorded; "
              "the report says when a seed was used.", metavar="INT")

E = Option("e", ("-e",), real_number(0.0),
           "(k,e)-anonymity: every group's sensitive range (max - min) is at least e.",
           metavar="NUMBER")
GROUP_COLUMN = Option("group_column", ("--group-column",), text,
                      "The column naming each row's group in a permuted release (default: "
                      "group).", metavar="NAME")
HISTORY_CHECK = Option("history_check", ("--history-check",),
                       choice("placeholders", "pruned", "naive", "ignore"),
                       "How a sequential (k,e) release honours the earlier ones: "
                       "placeholders (default: every group keeps its values for good, those "
                       "of members who left as placeholder rows; newcomers form groups of "
                       "their own), pruned (the covering partition, checked against the "
                       "previous release only, which suffices by Srisungsittisunti "
                       "& Natwichai's theorem; refused when departures expose someone), naive "
                       "(the same against every earlier release; slower), ignore (re-partition "
                       "as if alone; the history's gate then refuses it when it breaches).",
                       metavar="NAME", history_only=True)


def parse_domain(text: str) -> tuple[int, int]:
    """``"0,127"`` -> (0, 127)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        if len(parts) != 2:
            raise ValueError
        low, high = int(parts[0]), int(parts[1])
    except ValueError:
        raise InputError(f"--domain takes LOW,HIGH (two whole numbers), got {text!r}") from None
    if high < low:
        raise InputError(f"--domain {text}: the high end {high} is below the low end {low}")
    return low, high


def integer_domain(name: str, value: object, source: str) -> tuple[int, int]:
    """``LOW,HIGH`` (text) or a TOML list of two whole numbers."""
    if isinstance(value, str):
        return parse_domain(value)
    if isinstance(value, list | tuple) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return parse_domain(f"{value[0]},{value[1]}")
    raise InputError(f"{name} must be LOW,HIGH (two whole numbers), got {_describe(value)}")


integer_domain.kind = "LOW,HIGH"  # type: ignore[attr-defined]

TREE = Option("tree", ("--tree",), choice("optimal", "halving"),
              "The alphabetic tree: optimal (Garsia-Wachs, the default) or halving (the "
              "Kidney's weight-halving tree).", metavar="NAME")
SUMMARY = Option("summary", ("--summary",), choice("range", "set", "histogram"),
                 "What a released node shows: range (default for ordered columns), set, or "
                 "histogram (the range label plus each value's count in the side table).",
                 metavar="NAME")
DOMAIN = Option("domain", ("--domain",), integer_domain,
                "The stream tree's integer domain LOW,HIGH, fixed from the first release "
                "(default: the first release's smallest and largest value, grown to hold "
                "later values).",
                metavar="LOW,HIGH")
THRESHOLD = Option("threshold", ("--threshold",), real_number(0.0),
                   "The randomized release draws each value from the last subtree on its "
                   "path whose balance |left - right| / size^2 exceeds this (a heuristic, "
                   "not differential privacy).", metavar="NUMBER")
ACCEPT_HEURISTIC = Option("accept_heuristic", ("--accept-heuristic",), boolean,
                          "Write a release that has no formal privacy guarantee (its measure "
                          "is a heuristic); refused without it.", switch=True)

#: options that carry privacy models (turned into model objects by
#: :func:`anonkit.methods.models.models_from_options`)
MODEL_OPTIONS = ("k", "l", "t", "models")

# what the risk models judge a release against (anonkit.models.risk): given once, read by
# every model that needs it; given when no model reads it, refused
POPULATION = Option("population", ("--population",),
                    "anonkit.methods.models:population_table",
                    "k-map and δ-presence: a CSV or Parquet file of the population the table "
                    "was drawn from (at least the quasi-identifier columns, raw values); each "
                    "released class is judged by the population rows its labels cover.",
                    metavar="FILE", value_kind="FILE")
SAMPLING_FRACTION = Option("sampling_fraction", ("--sampling-fraction",),
                           real_number(0.0, low_open=True),
                           "population-uniqueness, k-map without --population, "
                           "individual-risk: the share of the population the table holds, "
                           "in (0, 1].", metavar="NUMBER")
POPULATION_SIZE = Option("population_size", ("--population-size",), real_number(1.0),
                         "Instead of --sampling-fraction: the size of the population the "
                         "table was drawn from.", metavar="NUMBER")
WEIGHT = Option("weight", ("--weight",), text,
                "individual-risk: the column of survey weights (people each row stands for, "
                ">= 1); it is released unchanged, so give it as insensitive.",
                metavar="COLUMN")
#: the options that give the risk models their context
POPULATION_OPTIONS = (POPULATION, SAMPLING_FRACTION, POPULATION_SIZE, WEIGHT)


M = Option("m", ("-m",), whole_number(2),
           "m-invariance: every class holds m distinct sensitive values (one row each), and a "
           "record keeps its class's set of values in every release.", metavar="INT")
UNWEIGHTED_SPLIT = Option("unweighted_split", ("--unweighted-split",), boolean,
                          "m-invariance: score a split by the plain sum of both halves' "
                          "normalised half-perimeters (default: weighted by class size).",
                          switch=True)


def share(name: str, value: object, source: str) -> float:
    """A share of rows: a number in [0, 1] (``0.05``: 5 %)."""
    number = real_number(0.0)(name, value, source)
    if number > 1.0:
        raise InputError(f"{name} must be a share of rows in [0, 1] (0.05 for 5 %), got "
                         f"{_describe(value)}")
    return number


share.kind = "number in [0, 1]"  # type: ignore[attr-defined]

#: the utility metrics global recoding minimises (see anonkit.algorithms.recoding_metrics)
RECODING_METRICS = ("loss", "precision", "discernibility", "non-uniform-entropy",
                    "average-class-size")
SUPPRESSION = Option("suppression", ("--suppression",), share,
                     "Global recoding: the share of rows that may be suppressed (released "
                     "with every QI as *), e.g. 0.05 for 5 % (default 0).", metavar="SHARE")
METRIC = Option("metric", ("--metric",), choice(*RECODING_METRICS),
                "Global recoding: the utility metric the chosen levels minimise (default "
                "loss).", metavar="NAME")
BUILD = Option("build", ("--build",), column_values,
               "Global recoding: build a QI's hierarchy instead of reading a file: "
               "intervals:5,10,20 (numbers; widths, each a multiple of the one below), mask "
               "(codes masked from the right), dates:month,year (dates) or flat (the value, "
               "then *; the default for a QI without hierarchy). Repeatable.",
               metavar="COLUMN=SPEC", multiple=True)


def split_csv(value: object, name: str) -> list[str]:
    """A column list from ``"a,b"`` or a TOML list of texts."""
    if value is None:
        return []
    if isinstance(value, str):
        return as_list(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"{name} must be a list of column names, got {_describe(value)}")
