"""The public job API: what the command line runs, and what a web app or a Python program
calls to do the same work.

On a DataFrame::

    release = anonkit.anonymize(df, "mondrian", quasi_identifiers=["age", "zip"],
                                sensitive="disease", identifiers=["id"], insensitive="*",
                                k=5, l=2)
    with anonkit.History("history.db") as history:
        info = history.publish(df, dataset="census", key="id", output="r1.csv",
                               method="m-invariance", quasi_identifiers=["age", "zip"],
                               sensitive=["disease"], insensitive="*", m=3)
        report = history.audit("census")

On files, as the command line does (a job is the settings of a job file, see
:func:`job_from`): :func:`anonymize_file`, :func:`check_file`, :func:`demo`,
:func:`read_publish_job` with :meth:`History.publish_job`, :func:`generate_testdata` with
:func:`write_testdata`. The web app (``anonkit serve``) runs these through
:class:`~anonkit.jobs.workbench.Workbench`.

Method options go by the methods' option names (``k``, ``l``, ``t``, ``models``,
``strategy``, ``m``, ``e``, ...; see :mod:`anonkit.methods.options`) and are checked the way
the command line checks them: a wrong value is an :class:`~anonkit.errors.InputError`,
never rounded or ignored. Nothing here prints: what the command line shows is returned, or
handed to the caller's ``warn`` and ``progress``.

One module per kind of job (:mod:`~anonkit.jobs.anonymization`, :mod:`~anonkit.jobs.check`,
:mod:`~anonkit.jobs.history`, :mod:`~anonkit.jobs.testdata`, and what they share in
:mod:`~anonkit.jobs.common`); the names below are loaded from them on first use, so a
command that anonymizes never loads the history's database layer.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "AnonymizedRelease": "anonkit.jobs.anonymization",
    "AuditReport": "anonkit.jobs.history",
    "CrossReleaseBreachError": "anonkit.jobs.history",
    "DEFAULT_HISTORY": "anonkit.jobs.history",
    "EXACT_ONLY": "anonkit.jobs.history",
    "EXACT_SECONDS": "anonkit.jobs.history",
    "GateOverriddenWarning": "anonkit.jobs.history",
    "HISTORY_ENV": "anonkit.jobs.history",
    "History": "anonkit.jobs.history",
    "HistoryWarning": "anonkit.jobs.history",
    "JOB_FIELDS": "anonkit.jobs.common",
    "Job": "anonkit.jobs.common",
    "Meter": "anonkit._util.progress",
    "Method": "anonkit.jobs.common",
    "Option": "anonkit.jobs.common",
    "PUBLISH_FIELDS": "anonkit.jobs.common",
    "PUBLISH_KEYS": "anonkit.jobs.common",
    "PublishJob": "anonkit.jobs.history",
    "Recovery": "anonkit.jobs.history",
    "ReleaseDetails": "anonkit.jobs.history",
    "ReleaseInfo": "anonkit.jobs.history",
    "SECRET_ENV": "anonkit.jobs.history",
    "SECRET_FILE_ENV": "anonkit.jobs.history",
    "TamperedHistoryError": "anonkit.jobs.history",
    "anonymize": "anonkit.jobs.anonymization",
    "anonymize_file": "anonkit.jobs.anonymization",
    "anonymize_on_dask": "anonkit.jobs.on_dask",
    "dask_chosen": "anonkit.jobs.common",
    "check_file": "anonkit.jobs.check",
    "check_job_types": "anonkit.jobs.job_file",
    "column_roles": "anonkit.jobs.reading",
    "demo": "anonkit.jobs.demo",
    "find_method": "anonkit.jobs.common",
    "format_parameters": "anonkit.jobs.history",
    "NO_FORMAL_GUARANTEE": "anonkit.jobs.history",
    "NO_FORMAL_GUARANTEE_TEXT": "anonkit.jobs.history",
    "recorded_status": "anonkit.jobs.history",
    "write_report": "anonkit.jobs.reports",
    "gate_text": "anonkit.jobs.history",
    "generate_testdata": "anonkit.jobs.testdata",
    "job_dialect": "anonkit.jobs.reading",
    "job_from": "anonkit.jobs.common",
    "method_options": "anonkit.jobs.common",
    "methods_help": "anonkit.jobs.common",
    "model_options": "anonkit.jobs.common",
    "one_shot_option_names": "anonkit.jobs.common",
    "printable_name": "anonkit.jobs.history",
    "read_publish_job": "anonkit.jobs.history",
    "reading_qis": "anonkit.jobs.common",
    "set_output_mode": "anonkit._util.files",
    "terminal_bar": "anonkit._util.progress",
    "records_text": "anonkit.jobs.history",
    "risk": "anonkit.jobs.reidentification",
    "risk_file": "anonkit.jobs.reidentification",
    "RiskReport": "anonkit.metrics.reidentification",
    "write_testdata": "anonkit.jobs.testdata",
    "Workbench": "anonkit.jobs.workbench",
}

__all__ = sorted(_WHERE)


def __dir__() -> list[str]:
    return sorted({*(n for n in globals() if n.startswith("__")), *__all__})


def __getattr__(name: str) -> object:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'anonkit.jobs' has no attribute {name!r}")
