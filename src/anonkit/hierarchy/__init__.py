"""Generalization hierarchies: the ARX file format and builders."""

from anonkit.hierarchy.arx import read_arx_hierarchy, write_arx_hierarchy
from anonkit.hierarchy.base import Hierarchy
from anonkit.hierarchy.builders import (
    date_hierarchy,
    grouping_hierarchy,
    interval_hierarchy,
    masking_hierarchy,
)

__all__ = [
    "Hierarchy",
    "date_hierarchy",
    "grouping_hierarchy",
    "interval_hierarchy",
    "masking_hierarchy",
    "read_arx_hierarchy",
    "write_arx_hierarchy",
]
