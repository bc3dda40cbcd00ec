"""Worker processes that run the user's program, each run under a time limit.

The program is the user's own code and runs with the user's rights; this is *not* a
sandbox. What the workers do guard against is a program that hangs, crashes or misbehaves
on one tuple: each run has a wall-clock limit (``SIGALRM``), the worker's address space is
capped (a huge allocation fails with ``MemoryError``), and while the program runs an audit
hook refuses process creation (``os.system``, ``subprocess``, ``exec``, ``fork``), signals
to other processes, deleting or renaming files and opening files for writing. A tuple that
trips any of these is reported with the reason; it is not fatal. The parent also watches
each task: a worker that dies or stops answering is killed, the pool is restarted and the
task's tuples are retried one by one, so one bad tuple cannot take the others with it.
The pool is always shut down (its processes killed if need be) before :func:`run_tasks`
returns or raises.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from anonkit.testdata.program import LoadedProgram, ProgramRef, load
from anonkit.testdata.trace import PathKey


@dataclass(frozen=True)
class Limits:
    """Per-run limits. ``time_limit``: seconds per program run; ``max_decisions``: branch
    decisions per path; ``memory_limit``: bytes a worker may add to its address space."""

    time_limit: float = 2.0
    max_decisions: int = 2_000
    memory_limit: int = 1 << 30


class RunTimeout(BaseException):
    """The program ran longer than its time limit."""


class BlockedOperation(BaseException):
    """The program tried an operation the workers refuse (see the module docstring)."""


_BLOCKED_EVENTS = ("os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn",
                   "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.remove", "os.rename",
                   "os.rmdir", "os.unlink", "shutil.rmtree", "os.truncate", "socket.connect",
                   "pty.spawn")

_program: LoadedProgram | None = None
_limits = Limits()
#: the paths this worker has already sent their conditions for (each condition travels to
#: the parent once per worker: the symbolic work is done once)
sent: set[PathKey] = set()
_guard_active = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _guard_active:
        return
    if event.startswith(_BLOCKED_EVENTS):
        raise BlockedOperation(f"the program attempted {event}{_shown(args)}, which test-data "
                               f"generation refuses")
    if event == "open" and len(args) > 1 and isinstance(args[1], str) and \
            any(c in args[1] for c in "wax+"):
        raise BlockedOperation(f"the program tried to open {args[0]!r} for writing")


def _shown(args: tuple[Any, ...]) -> str:
    text = repr(args)
    return f" {text[:80]}" if args else ""


def _on_alarm(signum: int, frame: object) -> None:
    raise RunTimeout(f"the program ran longer than the time limit of {_limits.time_limit:g} s")


def initialize(ref: ProgramRef, limits: Limits) -> None:
    """Load the program in this process and install the guards (also used in-process)."""
    global _program, _limits
    sent.clear()
    _program = load(ref)
    _limits = limits
    if multiprocessing.parent_process() is not None:
        sys.addaudithook(_audit)
        _cap_memory(limits.memory_limit)
    signal.signal(signal.SIGALRM, _on_alarm)


def _cap_memory(extra: int) -> None:
    try:
        import resource

        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[0])
        limit = pages * os.sysconf("SC_PAGE_SIZE") + extra
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError, ImportError):  # not Linux: no cap
        pass


def program() -> LoadedProgram:
    if _program is None:
        raise RuntimeError("the worker has no program loaded")
    return _program


def limits() -> Limits:
    return _limits


@contextmanager
def guarded() -> Iterator[None]:
    """Run the user's program: the time limit and (in a worker) the audit guard."""
    global _guard_active
    signal.setitimer(signal.ITIMER_REAL, _limits.time_limit)
    _guard_active = True
    try:
        yield
    finally:
        _guard_active = False
        signal.setitimer(signal.ITIMER_REAL, 0)


def failure_text(exc: BaseException) -> str:
    if isinstance(exc, MemoryError):
        return "the program ran out of memory (a huge allocation?)"
    return str(exc) or type(exc).__name__


# -- the pool -------------------------------------------------------------------------------
@dataclass
class TaskFailure:
    """A task whose worker died or stopped answering."""

    reason: str


def run_tasks(ref: ProgramRef, limits: Limits, fn: Callable[[Any], Any], tasks: Sequence[Any],
              timeouts: Sequence[float], split: Callable[[Any], list[Any]] | None = None,
              merge: Callable[[list[Any]], Any] | None = None, workers: int | None = None
              ) -> list[Any]:
    """``fn(task)`` for every task, in worker processes; results in task order.

    A task whose worker crashed or overran ``timeouts[i]`` is split into single items
    (``split``) that run alone with a restarted pool, then ``merge``d; an item that fails
    alone becomes a :class:`TaskFailure`. Without ``split`` the task itself becomes one.
    """
    n_workers = workers or min(os.cpu_count() or 1, 2)
    results: list[Any] = [None] * len(tasks)
    pool = _Pool(ref, limits, n_workers)
    try:
        failed = pool.run(fn, list(tasks), list(timeouts), results)
        for i in failed:
            if split is None:
                continue
            items = split(tasks[i])
            single: list[Any] = [None] * len(items)
            pool.run(fn, items, [limits.time_limit * 3 + 10] * len(items), single,
                     one_at_a_time=True)
            results[i] = merge(single) if merge is not None else single
    finally:
        pool.close()
    return results


class _Pool:
    """A process pool that is restarted when a worker dies or hangs."""

    def __init__(self, ref: ProgramRef, limits: Limits, n_workers: int) -> None:
        self.ref, self.limits, self.n_workers = ref, limits, n_workers
        self.executor: cf.ProcessPoolExecutor | None = None

    def _start(self) -> cf.ProcessPoolExecutor:
        if self.executor is None:
            self.executor = _pool(self.ref, self.limits, self.n_workers)
            try:
                self.executor.submit(_ping).result(timeout=120)
            except Exception as exc:
                self.close()
                raise RuntimeError(
                    f"the worker processes could not start ({type(exc).__name__}: {exc}); a "
                    f"script that calls anonkit.testdata.generate must guard its entry point "
                    f"with `if __name__ == '__main__':`") from None
        return self.executor

    def close(self) -> None:
        if self.executor is not None:
            _shutdown(self.executor)
            self.executor = None

    def run(self, fn: Callable[[Any], Any], tasks: list[Any], timeouts: list[float],
            results: list[Any], one_at_a_time: bool = False) -> list[int]:
        """Run ``tasks`` into ``results``; the indexes of tasks that killed or hung their
        worker when running alone (their result is a TaskFailure)."""
        failed: list[int] = []
        pending = list(range(len(tasks)))
        alone = one_at_a_time
        while pending:
            batch = pending[:1] if alone else pending
            pending = pending[1:] if alone else []
            unfinished = self._round(fn, tasks, timeouts, results, batch)
            if not unfinished:
                continue
            self.close()  # a dead or hung worker: a fresh pool for what is left
            if len(batch) == 1:
                failed.extend(unfinished)
                for i in unfinished:
                    results[i] = TaskFailure("the worker died or stopped answering")
            else:
                # find the culprit: what was unfinished runs again, one task at a time
                alone = True
                pending = unfinished + pending
        return failed

    def _round(self, fn: Callable[[Any], Any], tasks: list[Any], timeouts: list[float],
               results: list[Any], batch: list[int]) -> list[int]:
        executor = self._start()
        futures = {executor.submit(fn, tasks[i]): i for i in batch}
        # a rolling deadline: some task must finish within the longest task's allowance,
        # so a worker stuck where no signal reaches it is found after one allowance
        allowance = max(timeouts[i] for i in batch)
        deadline = time.monotonic() + allowance
        remaining = set(futures)
        unfinished: list[int] = []
        while remaining:
            left = deadline - time.monotonic()
            if left <= 0:
                unfinished.extend(futures[f] for f in remaining)
                break
            done, remaining = cf.wait(remaining, timeout=left,
                                      return_when=cf.FIRST_COMPLETED)
            if done:
                deadline = time.monotonic() + allowance
            for future in done:
                i = futures[future]
                exc = future.exception()
                if exc is None:
                    results[i] = future.result()
                elif isinstance(exc, cf.process.BrokenProcessPool):
                    unfinished.append(i)
                else:
                    raise exc
            if unfinished:
                unfinished.extend(futures[f] for f in remaining)
                break
        return sorted(unfinished)


def _ping() -> bool:
    return True


def _pool(ref: ProgramRef, limits: Limits, n_workers: int) -> cf.ProcessPoolExecutor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["anonkit.testdata.workers", "anonkit.testdata.solve"])
    return cf.ProcessPoolExecutor(n_workers, mp_context=context, initializer=initialize,
                                  initargs=(ref, limits))


def _shutdown(pool: cf.ProcessPoolExecutor) -> None:
    """Stop the pool's processes (only ours), killing any that do not stop."""
    processes = list(getattr(pool, "_processes", {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=0.5)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)
