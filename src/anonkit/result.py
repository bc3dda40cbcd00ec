"""The former name of :class:`anonkit.release.Release`, kept for existing callers."""

from anonkit.release import Release as AnonymizationResult

__all__ = ["AnonymizationResult"]
