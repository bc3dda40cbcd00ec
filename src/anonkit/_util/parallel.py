"""Threads, in one place: the work anonkit spreads over the cores (Mondrian's rounds,
generalizing columns) and the reading the command line does while it imports, all run on
one pool. numpy, Arrow and anonkit's C extensions let go of the GIL while they work, so
threads really share the cores."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def cores() -> int:
    return os.cpu_count() or 1


def pool() -> ThreadPoolExecutor:
    """The shared threads (one fewer than the cores: the caller works too), created on
    first use. Idle workers end at once when the interpreter exits, and os._exit does not
    wait for them at all."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=max(1, cores() - 1),
                                           thread_name_prefix="anonkit")
        return _executor


def _forget_pool() -> None:
    """A forked child has none of its parent's threads: it starts a pool of its own."""
    global _executor, _lock
    _executor = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def in_background(fn: Callable[..., _R], *args: object) -> Future[_R]:
    """``fn(*args)`` on the pool; ``.result()`` waits for it and raises what it raised."""
    return pool().submit(fn, *args)


def on_all_cores(work: Callable[[_T], _R], items: Sequence[_T], cost: Sequence[float]
                 ) -> list[_R]:
    """``[work(item) for item in items]``, several items at a time.

    The costliest items go first, so that no thread is left with one at the end; the
    calling thread takes the very costliest, as its memory is at hand (another thread
    allocates from memory of its own, new to the process: page faults). The caller works
    through the queue too, so this finishes even when no pool thread is free."""
    workers = min(len(items), cores())
    if workers < 2:
        return [work(item) for item in items]
    todo = iter(sorted(range(len(items)), key=lambda i: -cost[i]))
    lock = threading.Lock()
    done: dict[int, _R] = {}

    def take_turns() -> None:
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            done[i] = work(items[i])

    costliest = next(todo)
    helpers = [pool().submit(take_turns) for _ in range(workers - 1)]
    try:
        done[costliest] = work(items[costliest])
        take_turns()
    finally:
        for helper in helpers:
            if not helper.cancel():  # (started: wait for the item it holds)
                helper.exception()
    for helper in helpers:
        if not helper.cancelled():
            helper.result()  # raises what the helper raised
    return [done[i] for i in range(len(items))]
