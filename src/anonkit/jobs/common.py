"""What every job shares: the job's settings (the keys of a job file), the methods'
options, column roles, and the schema of a DataFrame from the roles given."""


from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from anonkit import methods
from anonkit._util.options import job_qis
from anonkit.errors import AnonkitWarning, InputError
from anonkit.methods import Method, Option

#: a job: the settings of a job file (the keys of :data:`JOB_FIELDS`, and ``options``, the
#: method's typed options), as :func:`job_from` makes it from a file and the command line
Job = Mapping[str, object]
#: column names: a list, or one text of comma-separated names
Columns = str | Sequence[str]
#: a file name
PathText = str | os.PathLike[str]

TEXTS = list[str] | str  # a list of texts, or one text (comma-separated columns, a file)
#: the keys of a job file besides the methods' options (see anonkit.methods), with their
#: types: a job file is validated against them (:func:`check_job_types`) before anything
#: runs, so a wrong type is refused, never coerced (``allow_missing = "false"`` is not true)
JOB_FIELDS: dict[str, object] = {
    "input": str, "output": str, "report": str, "method": str,
    "quasi_identifiers": TEXTS, "sensitive": TEXTS, "identifiers": TEXTS,
    "insensitive": TEXTS, "drop": TEXTS, "hierarchies": dict[str, str],
    "kinds": dict[str, str], "separator": str, "shuffle": bool, "mkdir": bool,
    "header": bool, "names": TEXTS, "na_values": TEXTS, "skipinitialspace": bool,
    "encoding": str, "orders": dict[str, TEXTS],
    "engine": str, "workers": int, "scheduler": str, "neutralize_formulas": bool,
    "max_input_bytes": int | str,
    # a database input (the input a URL) and output (the output a URL)
    "table": str, "query": str, "output_table": str, "replace": bool,
}
JOB_KEYS = frozenset(JOB_FIELDS)
#: the keys a publish job file has beside the anonymize job's, with their types
PUBLISH_FIELDS: dict[str, object] = {"dataset": str, "key": str}
PUBLISH_KEYS = frozenset(PUBLISH_FIELDS)
# -- the methods, for those who declare their options -------------------------------------


def find_method(name: str) -> Method:
    """The registered method ``name`` (:class:`InputError` naming the methods if none)."""
    return methods.get(name)


def method_options() -> list[Option]:
    """Every option of every method, each name once (the command line declares them all
    and refuses those the chosen method does not take)."""
    return methods.all_options()


def one_shot_option_names() -> set[str]:
    """The options of the methods that run without a history (``anonymize`` shows only
    these in its help; the others are still read, to be refused with a clear message)."""
    return {o.name for m in methods.methods() if m.runner or m.function is not None
            for o in m.options if not o.history_only}


def model_options() -> list[Option]:
    """The options that name privacy models: ``k``, ``l``, ``t``, ``models``; and what the
    risk models judge against (``population``, ``sampling_fraction``, ...)."""
    return [methods.K, methods.L, methods.T, methods.MODELS, *methods.POPULATION_OPTIONS]


def methods_help() -> str:
    """Every method with its options, as ``anonkit methods`` prints them."""
    return "\n\n".join(methods.method_help(m) for m in methods.methods())


# -- jobs: from a job file and the command line -------------------------------------------


def values_list(value: object, what: str) -> list[str]:
    """Values from a TOML list, a file with one a line, or comma-separated text."""
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value]
    if not isinstance(value, str):
        raise InputError(f"{what} must be a list of texts, a file name or comma-separated "
                         f"text, got {value!r}")
    path = Path(value)
    if value and path.is_file():
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read {what} from {path}: {exc}") from None
        lines = [line.strip() for line in text.splitlines()]
        return [line for line in lines if line and not line.startswith("#")]
    return [v.strip() for v in value.split(",")]


def _orders(file_orders: object, pairs: Sequence[str]) -> dict[str, list[str]]:
    """Ordinal columns' orders: a TOML table (column = list or file) and --order pairs."""
    if file_orders is None:
        file_orders = {}
    if not isinstance(file_orders, Mapping):
        raise InputError(f"orders must be a table of column = [values] (or a file name), got "
                         f"{file_orders!r}")
    orders = {str(c): values_list(v, f"the order of {c!r}") for c, v in file_orders.items()}
    for pair in pairs:
        column, eq, values = pair.partition("=")
        if not eq or not column.strip() or not values.strip():
            raise InputError(f"--order {pair!r}: give COLUMN=V1,V2,... (low to high) or "
                             f"COLUMN=FILE")
        orders[column.strip()] = values_list(values, f"the order of {column.strip()!r}")
    for column, values in orders.items():
        dups = sorted({v for v in values if values.count(v) > 1})
        if dups or not values:
            raise InputError(f"the order of {column!r} "
                             f"{'lists ' + repr(dups[0]) + ' twice' if dups else 'is empty'}; "
                             f"list each value once, low to high")
    return orders


def job_from(config: Mapping[str, object], given: Mapping[str, object],
             method_values: Mapping[str, object],
             extra_keys: frozenset[str] = frozenset()) -> dict[str, object]:
    """One job: the job file's settings (``config``, type-checked already: see
    :func:`check_job_types`) overridden by the command line's (``given``: job keys, and
    ``hierarchy_pairs``, ``kind_pairs``, ``order_pairs`` as ``COLUMN=VALUE`` texts); the
    method's options (``method_values``: command-line text by option name) typed and
    checked (a wrong value is an error, never rounded or ignored). ``extra_keys``: the
    command's own keys beside :data:`JOB_FIELDS` (kept as given)."""
    job_keys = JOB_KEYS | extra_keys
    file_job = {k: v for k, v in config.items() if k in job_keys}
    file_options = {k: v for k, v in config.items() if k not in job_keys}
    job: dict[str, Any] = file_job | {key: value for key, value in given.items()
                                      if value is not None}
    if file_job.get("report") and given.get("report") is None \
            and given.get("output") is not None and given["output"] != file_job.get("output"):
        # the job file's report describes the job file's release: written beside another
        # output it would replace the report of an earlier release with a wrong one
        job.pop("report")
        warnings.warn(AnonkitWarning(
            f"the job file's report ({file_job['report']}) goes with its output "
            f"({file_job.get('output', 'none')}), not with -o {given['output']}: no report "
            f"is written; pass --report for this release"), stacklevel=2)
    if isinstance(job.get("na_values"), str):
        job["na_values"] = [job["na_values"]]
    method = methods.get(job.get("method") or "mondrian")
    job["method"] = method.name
    job["options"] = methods.parse_job_options(method, file_options, method_values)
    for key in ("quasi_identifiers", "sensitive", "identifiers", "drop"):
        job[key] = methods.split_csv(job.get(key), key)
    if job.get("insensitive") != "*":
        job["insensitive"] = methods.split_csv(job.get("insensitive"), "insensitive")
    job["hierarchies"] = dict(file_job.get("hierarchies") or {}) | methods.column_values(
        "hierarchy", list(given.get("hierarchy_pairs") or ()), "cli")  # type: ignore[call-overload]
    kinds = file_job.get("kinds") or {}
    job["kinds"] = methods.column_values("kinds", kinds, "toml") | methods.column_values(
        "kind", list(given.get("kind_pairs") or ()), "cli")  # type: ignore[call-overload]
    job["orders"] = _orders(file_job.get("orders"),
                            list(given.get("order_pairs") or ()))  # type: ignore[call-overload]
    job.pop("hierarchy_pairs", None)
    job.pop("kind_pairs", None)
    job.pop("order_pairs", None)
    return job


def dask_chosen(job: Job) -> bool:
    """Whether the job runs on the Dask engine; --workers / --scheduler need it."""
    engine, workers, scheduler = job.get("engine"), job.get("workers"), job.get("scheduler")
    if engine not in (None, "local", "dask"):
        raise InputError(f"engine must be local or dask, got {engine!r}")
    if workers is not None and workers < 1:  # type: ignore[operator]
        raise InputError(f"workers must be a whole number >= 1, got {workers}")
    if engine != "dask" and (workers is not None or scheduler is not None):
        raise InputError("--workers and --scheduler choose a Dask cluster: add --engine dask")
    return engine == "dask"


# -- anonymize ----------------------------------------------------------------------------


def reading_qis(job: Job) -> list[str] | None:
    """The quasi-identifiers with which to start reading an anonymization job's input ahead
    of the job (:func:`anonkit.jobs.reading.read_job_input`, handed to
    :func:`anonkit.jobs.anonymize_file` as ``reading``); None when the job will not read it
    that way (on Dask), or cannot (no input or quasi-identifiers: the job itself then says
    what is wrong, in its order)."""
    if dask_chosen(job):
        return None
    try:
        return job_qis(job, "-o FILE")
    except InputError:
        return None
