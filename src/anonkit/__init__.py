"""anonkit: privacy-preserving data publishing with a release history."""

from anonkit.errors import AnonkitError, InputError, ModelNotMetError
from anonkit.hierarchy import Hierarchy, read_arx_hierarchy
from anonkit.table import ColumnSpec, Kind, Role, Schema

__version__ = "0.1.0"

__all__ = [
    "AnonkitError",
    "ColumnSpec",
    "Hierarchy",
    "InputError",
    "Kind",
    "ModelNotMetError",
    "Role",
    "Schema",
    "read_arx_hierarchy",
]
