"""The one registry of anonymization methods, behind ``anonymize``, ``release publish`` and
the TOML job file.

Each method declares (:class:`Method`) its typed options, whether it is one-shot or
sequential, its release kind and the threat model it claims against repeated releases. The
command line turns the options into real options (``-k``, ``-m``, ``--strategy`` ...), the
job file reads them under the same names, and Python callers pass them as keywords; all
three go through the same parser (:meth:`Option.parse`), so a value that is not what it
claims to be is refused the same way everywhere -- never rounded, never silently weakened
(``k=4.9``, ``k=true`` and ``k=abc`` are errors, not k = 4, 1 or a crash).

Privacy models given as options (``k``, ``l``, ``t``, ``models``) become model objects
once (:func:`models_from_options`): a threshold is never formatted and parsed again, so
``t=0.12345678`` is enforced as exactly that.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from anonkit._util.options import as_list
from anonkit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from anonkit.assemble import Progress
    from anonkit.data.table import Schema
    from anonkit.models.base import PrivacyModel
    from anonkit.release import Release

#: where an option value comes from: text typed on the command line, a TOML value, or a
#: Python value; only command-line text is converted from text
SOURCES = ("cli", "toml", "python")

_WHOLE = re.compile(r"[+-]?\d+")


def _describe(value: object) -> str:
    return repr(value) if not isinstance(value, str) else f"{value!r} (text)"


# -- value parsers: (option name, value, source) -> typed value, or InputError ------------


def whole_number(minimum: int) -> Callable[[str, object, str], int]:
    def parse(name: str, value: object, source: str) -> int:
        if isinstance(value, str) and source == "cli" and _WHOLE.fullmatch(value.strip()):
            number = int(value.strip())
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            raise InputError(f"{name} must be a whole number >= {minimum}, got "
                             f"{_describe(value)}")
        if number < minimum:
            raise InputError(f"{name} must be a whole number >= {minimum}, got {number}")
        return number

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


def model_list(name: str, value: object, source: str) -> list[PrivacyModel]:
    """Privacy models: objects, or their short forms (``entropy-l=2``, ``ke=3,2000``)."""
    from anonkit.checker import parse_model
    from anonkit.models.base import PrivacyModel

    # a job file must give a list (a lone text there is a mistake the next key would hide)
    single = isinstance(value, PrivacyModel) or (isinstance(value, str) and source != "toml")
    items = [value] if single else value
    if not isinstance(items, list | tuple):
        raise InputError(f"{name} must be a list of models such as [\"t=0.2\"], got "
                         f"{_describe(value)}")
    out = []
    for item in items:
        if isinstance(item, PrivacyModel):
            out.append(item)
        elif isinstance(item, str):
            out.append(parse_model(item))
        else:
            raise InputError(f"{name}: {_describe(item)} is not a model; write it as text, "
                             f"e.g. \"t=0.2\"")
    return out


model_list.kind = "MODEL"  # type: ignore[attr-defined]


# -- options and methods ----------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One typed option of a method: its name (also the TOML key and Python keyword), its
    command-line flags, its parser, and its help."""

    name: str
    flags: tuple[str, ...]
    parse_value: Callable[[str, object, str], Any]
    help: str
    metavar: str = ""
    multiple: bool = False  # repeatable on the command line; values collect in a list
    switch: bool = False  # a command-line flag without value (sets True)

    def parse(self, value: object, source: str) -> Any:
        return self.parse_value(self.name, value, source)

    @property
    def kind(self) -> str:
        return str(getattr(self.parse_value, "kind", ""))

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
MODELS = Option("models", ("--model",), model_list,
                "A further privacy model (repeatable): entropy-l=2, recursive-cl=3,2, "
                "t-ordered=0.2, delta=1.5,absent=fail, beta=1, ke=3,2000, m=4 ...",
                metavar="MODEL", multiple=True)
GENERALIZATION = Option("generalization", ("--generalization",), column_values,
                        "COLUMN=FORM: range, set, hierarchy, prefix, mean or median "
                        "(repeatable).", metavar="COLUMN=FORM", multiple=True)
STRATEGY = Option("strategy", ("--strategy",), choice("widest", "entropy", "distinct",
                                                      "random"),
                  "How Mondrian chooses the cut dimension (default: widest).", metavar="NAME")
REMOVE_CUT = Option("remove_cut_dimension", ("--remove-cut-dimension",), boolean,
                    "Spec 002's variant: a dimension once cut is not cut again below.",
                    switch=True)
SINGLE_DIMENSIONAL = Option("single_dimensional", ("--single-dimensional",), boolean,
                            "Spec 002's variant: stop after the first cut.", switch=True)
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
                       choice("pruned", "naive", "ignore"),
                       "How a sequential (k,e) release honours the earlier ones: pruned "
                       "(default: the previous release only, by Theorem 1), naive (every "
                       "earlier release; same result, slower), ignore (re-partition as if "
                       "alone; the history's gate then refuses it when it breaches).",
                       metavar="NAME")


def integer_domain(name: str, value: object, source: str) -> tuple[int, int]:
    """``LOW,HIGH`` (text) or a TOML list of two whole numbers."""
    from anonkit.algorithms.stream_tree import parse_domain

    if isinstance(value, str):
        return parse_domain(value)
    if isinstance(value, list | tuple) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return parse_domain(f"{value[0]},{value[1]}")
    raise InputError(f"{name} must be LOW,HIGH (two whole numbers), got {_describe(value)}")


integer_domain.kind = "LOW,HIGH"  # type: ignore[attr-defined]

TREE = Option("tree", ("--tree",), choice("optimal", "halving"),
              "The alphabetic tree: optimal (Garsia-Wachs, the default) or halving (the "
              "notebook's weight-halving tree).", metavar="NAME")
SUMMARY = Option("summary", ("--summary",), choice("range", "set", "histogram"),
                 "What a released node shows: range (default for ordered columns), set, or "
                 "histogram (the range label plus each value's count in the side table).",
                 metavar="NAME")
DOMAIN = Option("domain", ("--domain",), integer_domain,
                "The stream tree's integer domain LOW,HIGH, fixed from the first release "
                "(default: the first release's smallest and largest value).",
                metavar="LOW,HIGH")
THRESHOLD = Option("threshold", ("--threshold",), real_number(0.0),
                   "The randomized release draws each value from the last subtree on its "
                   "path whose balance |left - right| / size^2 exceeds this (a heuristic, "
                   "not differential privacy).", metavar="NUMBER")
ACCEPT_HEURISTIC = Option("accept_heuristic", ("--accept-heuristic",), boolean,
                          "Write a release that has no formal privacy guarantee (its measure "
                          "is a heuristic); refused without it.", switch=True)

#: options that carry privacy models (turned into model objects by models_from_options)
MODEL_OPTIONS = ("k", "l", "t", "models")


@dataclass(frozen=True)
class Method:
    """A registered anonymization method.

    ``anonymize(df, schema, options) -> Release`` runs it one-shot on a table (None for a
    method that only publishes with a history). ``publish(df, request, context) ->
    Release`` runs it as the next release of a dataset in the history; a one-shot method
    publishes by ignoring the history (the history's gate then judges the result).
    ``typed``: the options are checked against ``options``; False for methods registered
    with raw Python options (test methods).
    """

    name: str
    summary: str
    kind: str  # a ReleaseKind value
    sequential: bool
    threat_model: str  # a ThreatModel value
    options: tuple[Option, ...] = ()
    #: ``anonymize(df, schema, options, progress=None)``; ``progress`` as in
    #: :data:`anonkit.assemble.Progress` (a method may ignore it)
    anonymize: Callable[..., Release] | None = None
    publish: Callable[..., Release] | None = None
    typed: bool = True

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def parse_options(self, given: Mapping[str, object], source: str) -> dict[str, Any]:
        """Typed option values from ``given`` (name -> raw value); an option the method
        does not take is an error naming the method's options."""
        if not self.typed:
            return dict(given)
        out: dict[str, Any] = {}
        for name, value in given.items():
            option = self.option(name)
            if option is None:
                known = ", ".join(o.flag if source == "cli" else o.name for o in self.options)
                shown = "--" + name.replace("_", "-") if source == "cli" else repr(name)
                raise InputError(f"method {self.name!r} has no option {shown}; its options "
                                 f"are: {known or 'none'}")
            out[name] = option.parse(value, source)
        return out


_REGISTRY: dict[str, Method] = {}


def register(method: Method, *, replace: bool = False) -> Method:
    if method.name in _REGISTRY and not replace:
        raise ValueError(f"a method named {method.name!r} is already registered")
    _REGISTRY[method.name] = method
    return method


def get(name: str) -> Method:
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown method {name!r}; the methods are: "
                         f"{', '.join(names())}") from None


def names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def methods() -> list[Method]:
    return [_REGISTRY[n] for n in names()]


def all_options() -> list[Option]:
    """Every option of every method, each name once (the command line declares them all
    and refuses those the chosen method does not take)."""
    seen: dict[str, Option] = {}
    for method in methods():
        for option in method.options:
            seen.setdefault(option.name, option)
    return list(seen.values())


def models_from_options(options: Mapping[str, Any]) -> list[PrivacyModel]:
    """The privacy models the typed options ask for, as objects: ``k``, ``models``, then
    ``l`` and ``t``."""
    from anonkit.models.base import KAnonymity
    from anonkit.models.closeness import TCloseness
    from anonkit.models.diversity import DistinctLDiversity

    out: list[PrivacyModel] = []
    if options.get("k") is not None:
        out.append(KAnonymity(options["k"]))
    out += list(options.get("models") or [])
    if options.get("l") is not None:
        out.append(DistinctLDiversity(options["l"]))
    if options.get("t") is not None:
        out.append(TCloseness(options["t"]))
    return out


# -- the built-in methods ---------------------------------------------------------------


def _mondrian_anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                        progress: Progress | None = None) -> Release:
    from anonkit.algorithms.mondrian import Mondrian

    settings = {name: options[name] for name in ("strategy", "generalization",
                                                  "remove_cut_dimension",
                                                  "single_dimensional", "allow_missing",
                                                  "seed") if options.get(name) is not None}
    return Mondrian(models=models_from_options(options), **settings).anonymize(
        df, schema=schema, progress=progress)


def _ke_anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                  progress: Progress | None = None) -> Release:
    from anonkit.algorithms import ke
    from anonkit.assemble import no_progress

    with (progress or no_progress)("partitioning", len(df)):
        return ke.anonymize(df, schema, options)


def _ke_publish(df: pd.DataFrame, request: Any, context: Any) -> Release:
    from anonkit.algorithms import ke

    return ke.publish(df, request, context)


def _one_shot_publish(method: Method) -> Callable[..., Release]:
    def publish(df: pd.DataFrame, request: Any, context: Any) -> Release:
        assert method.anonymize is not None
        return method.anonymize(df, context.schema, dict(request.options))

    return publish


_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    mondrian = Method(
        "mondrian", "Strict multidimensional Mondrian (LeFevre et al. 2006); every privacy "
        "model is a cut constraint. One-shot: re-running it on a changed table is refused "
        "by the history's gate almost always.", "generalized", sequential=False,
        threat_model="one-shot",
        options=(K, L, T, MODELS, GENERALIZATION, STRATEGY, REMOVE_CUT, SINGLE_DIMENSIONAL,
                 ALLOW_MISSING, SEED),
        anonymize=_mondrian_anonymize)
    register(replace(mondrian, publish=_one_shot_publish(mondrian)),
             replace=True)
    register(Method(
        "ke", "(k,e)-anonymity (Zhang et al. 2007): the optimal partition by sensitive value "
        "(least sum of group ranges), QIs exact, values permuted within groups. Sequential: "
        "a release never intersects an earlier one below k values or range e (spec 004).",
        "permuted", sequential=True, threat_model="incremental-(k,e)",
        options=(K, E, GROUP_COLUMN, HISTORY_CHECK, SEED),
        anonymize=_ke_anonymize, publish=_ke_publish), replace=True)
    _load_compression()
    _load_minvariance()


def _compression_anonymize(name: str) -> Callable[..., Release]:
    def anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                  progress: Progress | None = None) -> Release:
        from anonkit.algorithms.compression import CompressionAnonymizer

        if options.get("k") is None:
            raise InputError(f"method {name!r} needs -k")
        return CompressionAnonymizer(name, k=options["k"], l=options.get("l"),
                                     tree=options.get("tree"),
                                     summary=options.get("summary") or "range").anonymize(
            df, schema, progress=progress)

    return anonymize


def _randomized_anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                          progress: Progress | None = None) -> Release:
    from anonkit.algorithms.compression import randomized_release

    if options.get("threshold") is None:
        raise InputError("method 'randomized' needs --threshold")
    return randomized_release(df, schema, threshold=options["threshold"],
                              tree=options.get("tree"), seed=options.get("seed"))


def _stream_tree_anonymize(df: pd.DataFrame, schema: Schema, options: dict[str, Any],
                           progress: Progress | None = None) -> Release:
    from anonkit.algorithms import stream_tree

    return stream_tree.anonymize(df, schema, options)


def _stream_tree_publish(df: pd.DataFrame, request: Any, context: Any) -> Release:
    from anonkit.algorithms import stream_tree

    return stream_tree.publish(df, request, context)


def _load_compression() -> None:
    """The compression-anonymity methods of spec 003."""
    for name, summary, options in (
            ("huffman", "k-anonymity by truncating the Huffman tree of the QI values (spec "
             "003): a value is released as the summary of the node where its walk from the "
             "root stops. Nodes may mix distant values.", (K, L, SUMMARY)),
            ("alphabetic", "k-anonymity by truncating an order-preserving (alphabetic) tree "
             "of the QI values (spec 003): classes are disjoint ranges; the optimal tree "
             "(Garsia-Wachs) by default, the notebook's halving tree with --tree halving.",
             (K, L, TREE, SUMMARY))):
        method = Method(name, summary, "generalized", sequential=False,
                        threat_model="one-shot", options=options,
                        anonymize=_compression_anonymize(name))
        register(replace(method, publish=_one_shot_publish(method)), replace=True)
    register(Method(
        "randomized", "Randomised representative release (spec 003's diffAnonymize): each "
        "value is replaced by one drawn, weighted by counts, from a subtree of the "
        "alphabetic tree. HEURISTIC: no formal privacy guarantee (its balance measure is "
        "not differential privacy); refused without --accept-heuristic.", "generalized",
        sequential=False, threat_model="one-shot",
        options=(THRESHOLD, TREE, ACCEPT_HEURISTIC, SEED),
        anonymize=_randomized_anonymize), replace=True)
    register(Method(
        "stream-tree", "The streaming counting tree (spec 003): a perfect binary tree of "
        "counts over a fixed integer domain; each row is released as the span where the "
        "walk from the root stops. Sequential: counts live in the history, spans only "
        "narrow, so intersecting releases narrows nothing.", "generalized",
        sequential=True, threat_model="monotone-generalization", options=(K, DOMAIN),
        anonymize=_stream_tree_anonymize, publish=_stream_tree_publish), replace=True)


M = Option("m", ("-m",), whole_number(2),
           "m-invariance: every class holds m distinct sensitive values (one row each), and a "
           "record keeps its class's set of values in every release.", metavar="INT")
UNWEIGHTED_SPLIT = Option("unweighted_split", ("--unweighted-split",), boolean,
                          "m-invariance: score a split by the plain sum of both halves' "
                          "normalised half-perimeters (default: weighted by class size).",
                          switch=True)


def _minvariance_publish(df: pd.DataFrame, request: Any, context: Any) -> Release:
    from anonkit.history.engines import minvariance

    return minvariance.publish(df, request, context)


def _load_minvariance() -> None:
    register(Method(
        "m-invariance", "m-invariance (Xiao & Tao 2007) with the perimeter split of spec "
        "001: every release m-unique, and a record keeps its signature (its class's values) "
        "in every release, also after leaving and coming back; counterfeit rows fill in, "
        "their count per class published beside the release. Sequential only.",
        "generalized", sequential=True, threat_model="m-invariance",
        options=(M, UNWEIGHTED_SPLIT, SEED), publish=_minvariance_publish), replace=True)


def method_help(method: Method) -> str:
    """A method and its options, as ``anonkit methods`` prints them."""
    lines = [f"{method.name}  ({'sequential' if method.sequential else 'one-shot'}; "
             f"{method.kind} release; threat model: {method.threat_model})",
             f"    {method.summary}"]
    for option in method.options:
        value = "" if option.switch else f" {option.metavar or 'VALUE'}"
        flags = ", ".join(option.flags)
        lines.append(f"    {flags}{value}  [{option.name}: {option.kind}]")
        lines.append(f"        {option.help}")
    return "\n".join(lines)


def parse_job_options(method: Method, config: Mapping[str, object],
                      cli: Mapping[str, object]) -> dict[str, Any]:
    """A method's typed options from a job file (TOML values) overridden by the command
    line (text); repeatable options add up (the file's, then the command line's)."""
    from_file = method.parse_options(config, "toml")
    from_cli = method.parse_options(cli, "cli")
    out = dict(from_file)
    for name, value in from_cli.items():
        option = method.option(name)
        if option is not None and option.multiple and name in out:
            if isinstance(value, dict):
                out[name] = {**out[name], **value}
            else:
                out[name] = [*out[name], *value]
        else:
            out[name] = value
    return out


def split_csv(value: object, name: str) -> list[str]:
    """A column list from ``"a,b"`` or a TOML list of texts."""
    if value is None:
        return []
    if isinstance(value, str):
        return as_list(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InputError(f"{name} must be a list of column names, got {_describe(value)}")


__all__ = ["Method", "Option", "all_options", "get", "method_help", "models_from_options",
           "names", "parse_job_options", "register", "split_csv"]
