"""The Dask cluster a job runs on: a ``LocalCluster`` of worker processes by default, or an
existing scheduler (``tcp://host:8786``). A cluster started here is shut down when the
block ends, also on an error; a remote cluster is left running (only the client closes).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

from anonkit._util.progress import terminal_bar
from anonkit.errors import InputError


@contextlib.contextmanager
def dask_client(workers: int | None = None, scheduler: str | None = None,
                memory_limit: str | float | None = "auto") -> Iterator[Any]:
    """A :class:`distributed.Client` for the block.

    ``workers``: worker processes of the local cluster (default: one per core), one
    thread each (the Mondrian kernel and numpy use threads of their own).
    ``scheduler``: the address of a running scheduler instead of a local cluster.
    """
    from distributed import Client, LocalCluster

    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise InputError(f"--workers must be a whole number >= 1, got {workers!r}")
    if scheduler is not None:
        if workers is not None:
            raise InputError("--workers starts a local cluster; with --scheduler the "
                             "cluster's own workers are used: give one or the other")
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {scheduler} ({exc}); "
                             f"check the address (tcp://host:8786) and that it runs") from None
        try:
            yield client
        finally:
            client.close()
        return
    cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                           processes=True, memory_limit=memory_limit,
                           dashboard_address=":0", silence_logs=logging.ERROR)
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def wait_for(futures: Sequence[Any], label: str, show: bool) -> None:
    """Wait for ``futures``; with ``show``, a bar on standard error counting the parts
    done, in the style of every other step's bar."""
    from distributed import as_completed, wait

    if not futures:
        return
    if show:
        bar = terminal_bar(label, len(futures), "parts")
        try:
            for _ in as_completed(list(futures)):
                bar.update(1)
        finally:
            bar.close()
    wait(list(futures))
