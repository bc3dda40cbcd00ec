"""Scale-out on Dask: Mondrian, the checker and the metrics for tables that outgrow one
machine (see :mod:`anonkit.distributed.engine`)."""

from anonkit.distributed.check import DistributedCheck, check_parts
from anonkit.distributed.cluster import dask_client
from anonkit.distributed.engine import DaskMondrian, DistributedRelease

__all__ = ["DaskMondrian", "DistributedCheck", "DistributedRelease", "check_parts",
           "dask_client"]
