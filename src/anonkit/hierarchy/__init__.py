"""Generalization hierarchies: the ARX file format and builders."""

from anonkit.hierarchy.arx import read_arx_hierarchy, write_arx_hierarchy
from anonkit.hierarchy.base import Hierarchy

__all__ = ["Hierarchy", "read_arx_hierarchy", "write_arx_hierarchy"]
