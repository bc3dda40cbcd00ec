"""A column's role and kind: plain enums with no dependency, so that the privacy models and
the methods' options can name them without loading pandas (the command line declares its
options from them before it reads a table)."""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    IDENTIFIER = "identifier"  # never appears in any release
    QUASI_IDENTIFIER = "quasi_identifier"
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"


class Kind(StrEnum):
    NUMERIC = "numeric"
    CATEGORICAL = "categorical"
    ORDINAL = "ordinal"
    DATE = "date"

    @property
    def is_ordered(self) -> bool:
        return self is not Kind.CATEGORICAL
