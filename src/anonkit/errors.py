"""Exceptions. Every error a user can cause is an :class:`InputError` (CLI exit code 2)."""

from __future__ import annotations


class AnonkitError(Exception):
    """Base class of anonkit's own errors."""

    exit_code = 1


class AnonkitWarning(UserWarning):
    """Base class of anonkit's warnings: the command line prints each as one
    ``warning:`` line."""


class NoInformationWarning(AnonkitWarning):
    """Every quasi-identifier of a release is fully generalized: the release meets its
    models by telling nothing about anyone's quasi-identifiers (worth a look before it is
    filed: a smaller k, fewer models or a hierarchy usually keep something)."""


class InputError(AnonkitError, ValueError):
    """Bad input: the message names the culprit (column, row, value) and what to do."""

    exit_code = 2


class ModelNotMetError(AnonkitError):
    """A release would not satisfy its privacy model; nothing was written (fail closed)."""

    exit_code = 2


class HistoryError(InputError):
    """The release history refuses an operation (unknown dataset, wrong secret, breach...)."""


class ConcurrentPublishError(HistoryError):
    """Another process published to the same dataset at the same time; this one lost."""
