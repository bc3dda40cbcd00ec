"""A DataFrame and the roles given for its columns: the schema a job runs with, and the
hierarchies it names (objects, or ARX files to read)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from anonkit._util.options import as_list
from anonkit.data.schema import Kind, Schema
from anonkit.errors import InputError
from anonkit.hierarchy import Hierarchy, read_arx_hierarchy
from anonkit.jobs.common import Columns, PathText


def loaded_hierarchies(given: Mapping[str, Hierarchy | PathText] | None) -> dict[str, Hierarchy]:
    """Hierarchies by column: objects as they are, ARX files read."""
    return {column: h if isinstance(h, Hierarchy) else read_arx_hierarchy(h, name=column)
            for column, h in (given or {}).items()}


def schema_from_roles(df: pd.DataFrame, quasi_identifiers: Columns, sensitive: Columns | None,
                identifiers: Columns, insensitive: Columns, drop: Columns,
                hierarchies: Mapping[str, Hierarchy], kinds: Mapping[str, Kind | str] | None,
                orders: Mapping[str, Sequence[object]] | None
                ) -> tuple[pd.DataFrame, Schema]:
    """``df`` without its dropped columns, and its schema: every column needs a role
    (``insensitive="*"`` for all the others), as on the command line."""
    named = {"quasi-identifier": as_list(quasi_identifiers),
             "sensitive": as_list(sensitive), "identifier": as_list(identifiers),
             "insensitive": [] if insensitive == "*" else as_list(insensitive)}
    dropped = as_list(drop)
    for name in dropped:
        if name not in df.columns:
            raise InputError(f"unknown column {name!r} given as drop; the table has: "
                             f"{', '.join(map(str, df.columns))}")
        for role, names in named.items():
            if name in names:
                raise InputError(f"column {name!r} is given two roles: {role} and drop; "
                                 f"give it one")
    frame = df.drop(columns=dropped) if dropped else df
    schema = Schema.from_roles(frame, named["quasi-identifier"], named["sensitive"] or None,
                               named["identifier"], kinds=kinds or None,
                               hierarchies=hierarchies, orders=orders or None,
                               insensitive="*" if insensitive == "*" else named["insensitive"])
    return frame, schema
