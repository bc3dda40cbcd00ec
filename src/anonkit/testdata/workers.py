"""Worker processes that run the user's program, each run under a time limit and a guard.

The program is the user's own code and runs with the user's rights. The guard described
here **stops accidents, not an adversary**: it is built from CPython audit hooks
(:func:`sys.addaudithook`) and a few replaced functions, which code written to get round
them can (switch the guard off from inside the interpreter, use a module that was loaded
before the guard -- ``_posixsubprocess``, an already imported ``cffi`` -- or a C extension
no audit event covers). Where Linux offers Landlock, :mod:`~anonkit.testdata.confine` adds a
kernel-enforced layer such code cannot undo: no file created, written, linked, renamed or
deleted, no program executed, no TCP; elsewhere the audit-hook guard is all there is.

What the workers do:

- the program's *module* (its top level) is loaded in the worker, never in the parent, under
  the same guard and limits as a run; a top level that tries a refused operation, overruns
  the time limit, exits (``sys.exit``, ``os._exit``), fails, or kills its worker makes the
  whole job fail with :class:`ProgramRefused` (an :class:`~anonkit.errors.InputError`: exit
  code 2, nothing written);
- each run (and each load) has a wall-clock limit (``SIGALRM``) and a CPU-time limit
  (``RLIMIT_CPU``: a loop in C that no signal reaches gets the worker killed); the worker's
  address space is capped (a huge allocation fails with ``MemoryError``);
- while the program runs, and at any time in a thread the program started, the guard
  refuses: starting processes (``os.system``, ``subprocess``, ``os.exec*``, ``os.fork``,
  ``os.spawn*``, ``os.posix_spawn``, ``pty.spawn``); signalling processes; ``os._exit`` and
  ``os.abort``; opening a file other than ``os.devnull`` for writing (``open`` with
  ``w``/``a``/``x``/``+``, ``os.open`` with write, create, truncate or append flags);
  creating, changing or deleting files and folders (``os.remove``/``unlink``,
  ``rename``/``replace``, ``rmdir``, ``mkdir``, ``chmod``, ``chown``, ``link``,
  ``symlink``, ``truncate``, ``utime``, xattrs, ``shutil`` copies, moves and deletions,
  ``tempfile``, ``sqlite3.connect``); foreign code (every ``ctypes`` event -- ``dlopen``,
  ``dlsym``, calls -- and importing ``ctypes``, ``_ctypes`` or ``cffi`` when that loads
  them); the network (every ``socket`` event, name lookups included, and the standard
  library's clients). The run is reported as refused, naming the operation (never its
  arguments, which may hold data values); a refusal the program catches still refuses the
  tuple; the other tuples go on.

The parent watches each task: a worker that dies or stops answering is killed, the pool is
restarted and the task's tuples are retried one by one, so one bad tuple cannot take the
others with it. The pool is always shut down (its processes killed if need be) before
:func:`run_tasks` returns or raises.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from anonkit.errors import InputError
from anonkit.testdata.confine import confine
from anonkit.testdata.program import LoadedProgram, ProgramRef, load
from anonkit.testdata.trace import PathKey

try:
    import resource
except ImportError:  # not Unix: no CPU or memory limits
    resource = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Limits:
    """Per-run limits. ``time_limit``: seconds per program run (and per load of the
    program's top level); ``max_decisions``: branch decisions per path; ``memory_limit``:
    bytes a worker may add to its address space."""

    time_limit: float = 2.0
    max_decisions: int = 2_000
    memory_limit: int = 1 << 30


class RunTimeout(BaseException):
    """The program ran longer than its time limit."""


class BlockedOperation(BaseException):
    """The program tried an operation the guard refuses (see the module docstring)."""

    def __init__(self, operation: str) -> None:
        super().__init__(operation)
        self.operation = operation

    def __str__(self) -> str:
        return f"refused: the program tried {self.operation}, which the test-data guard blocks"


class ProgramRefused(InputError):
    """The program cannot be loaded in a guarded worker (its top level was refused, overran
    the time limit, exited or failed), or the workers could not start."""


# audit events refused while the program runs: exact names, and prefixes ending in "."
_REFUSED_EVENTS = frozenset({
    # starting or signalling processes
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.startfile", "subprocess.Popen", "pty.spawn", "os.kill", "os.killpg",
    "signal.pthread_kill",
    # creating, changing or deleting files and folders
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.lchmod", "os.chown",
    "os.lchown", "os.chflags", "os.lchflags", "os.link", "os.symlink", "os.truncate",
    "os.utime", "os.setxattr", "os.removexattr", "shutil.rmtree", "shutil.move",
    "shutil.copyfile", "shutil.copymode", "shutil.copystat", "shutil.copytree",
    "shutil.make_archive", "shutil.unpack_archive", "tempfile.mkstemp", "tempfile.mkdtemp",
    "sqlite3.connect", "sqlite3.connect/handle",
    # the network (socket.* below) and the standard library's clients
    "urllib.Request", "webbrowser.open", "ftplib.connect", "smtplib.connect",
    "imaplib.open", "poplib.connect", "nntplib.connect", "telnetlib.Telnet.open",
    "http.client.connect",
})
_REFUSED_PREFIXES = ("ctypes.", "socket.")
#: modules whose import is refused (when the import loads them: see the module docstring)
_REFUSED_MODULES = ("ctypes", "_ctypes", "cffi", "_cffi_backend")
_WRITE_FLAGS = (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
                | getattr(os, "O_TMPFILE", 0))

_program: LoadedProgram | None = None
_load_problem: str | None = None
_limits = Limits()
#: the paths this worker has already sent their conditions for (each condition travels to
#: the parent once per worker: the symbolic work is done once)
sent: set[PathKey] = set()
_guard_active = False
#: the worker's main thread (None: no guard installed, as in the parent process)
_main_thread: int | None = None
#: the first operation refused during the current run (even if the program caught it)
_refusal: str | None = None
#: what the kernel-level layer (Landlock) did in this worker
confinement = "not a worker process: no guard"


def _refused(event: str, args: tuple[Any, ...]) -> str | None:
    """The operation an audit event stands for when the guard refuses it, else None."""
    if event in _REFUSED_EVENTS or event.startswith(_REFUSED_PREFIXES):
        return event
    if event == "open" and len(args) > 2 and args[0] != os.devnull:
        mode, flags = args[1], args[2]
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            return f"to open a file for writing (open mode {mode!r})"
        if mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS:
            return "to open a file for writing (os.open with write/create flags)"
    if event == "import" and args and isinstance(args[0], str) and \
            args[0].split(".")[0] in _REFUSED_MODULES:
        return f"to import {args[0].split('.')[0]}"
    return None


def _refusing() -> bool:
    """Whether the guard refuses now: while the program runs, and in any thread but the
    worker's own (threads the program may have started)."""
    return _main_thread is not None and (_guard_active or
                                          threading.get_ident() != _main_thread)


def _refuse(operation: str) -> None:
    global _refusal
    if _guard_active and _refusal is None:
        _refusal = operation
    raise BlockedOperation(operation)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _refusing():
        return
    operation = _refused(event, args)
    if operation is not None:
        _refuse(operation)


def _guard_exits() -> None:
    """``os._exit`` and ``os.abort`` raise no audit event: refuse them while the guard is
    on (the worker's own exit goes through)."""
    import posix

    for name in ("_exit", "abort"):
        real = getattr(os, name)

        def guarded_call(*args: Any, _real: Callable[..., Any] = real, _name: str = name
                         ) -> Any:
            if _refusing():
                _refuse(f"os.{_name} (it would end the worker process)")
            return _real(*args)

        setattr(os, name, guarded_call)
        setattr(posix, name, guarded_call)


def _quiet_refused_threads() -> None:
    """A thread the program started that trips the guard ends without a traceback on
    stderr (the tuple that was running is reported as refused)."""
    previous = threading.excepthook

    def hook(args: Any) -> None:
        if not isinstance(args.exc_value, BlockedOperation):
            previous(args)

    threading.excepthook = hook


def _on_alarm(signum: int, frame: object) -> None:
    raise RunTimeout(f"the program ran longer than the time limit of {_limits.time_limit:g} s")


def initialize(ref: ProgramRef, limits: Limits) -> None:
    """Install the guards (in a worker process only) and load the program under them.

    Also used in-process (by tests), where no guard is installed; the load still runs under
    the time limit. A load that fails is recorded: :func:`program` then raises
    :class:`ProgramRefused`, and :func:`_ping` hands the reason to the parent.
    """
    global _program, _limits, _load_problem, _main_thread, confinement
    sent.clear()
    _program, _load_problem, _limits = None, None, limits
    signal.signal(signal.SIGALRM, _on_alarm)
    worker = multiprocessing.parent_process() is not None
    if worker and _main_thread is None:
        sys.dont_write_bytecode = True  # imports must not write bytecode caches
        confinement = _confine()
        _main_thread = threading.get_ident()
        sys.addaudithook(_audit)
        _guard_exits()
        _quiet_refused_threads()
        _no_core_files()
        _cap_memory(limits.memory_limit)
    try:
        _program = load(ref, guard=guarded)
    except BlockedOperation as exc:
        _load_problem = f"its top level tried {exc.operation}, which the test-data guard blocks"
    except RunTimeout:
        _load_problem = (f"its top level ran longer than the time limit of "
                         f"{limits.time_limit:g} s")
    except SystemExit:
        _load_problem = "its top level called sys.exit (raised SystemExit)"
    except MemoryError:
        _load_problem = "its top level ran out of memory (a huge allocation?)"
    except InputError as exc:
        _load_problem = str(exc)
    except BaseException as exc:  # KeyboardInterrupt, GeneratorExit, ...: refuse the load
        _load_problem = f"its top level raised {type(exc).__name__}"


def _confine() -> str:
    try:
        return confine()
    except Exception as exc:  # never let the second layer stop the first
        return f"Landlock could not be applied ({type(exc).__name__})"


def _no_core_files() -> None:
    """A worker the kernel kills (``SIGXCPU``) must not leave a core file behind."""
    with suppress(OSError, ValueError, AttributeError):  # AttributeError: not Unix
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))


def _limit_cpu(seconds: float) -> tuple[int, int] | None:
    """In a worker: a CPU-time limit (``RLIMIT_CPU``) ``seconds`` from now, so a loop in C
    that ``SIGALRM`` cannot interrupt is ended by the kernel (``SIGXCPU`` kills the worker;
    the parent reports the tuple, or the load). The previous limits, to restore."""
    if _main_thread is None or resource is None:
        return None
    try:
        previous = resource.getrlimit(resource.RLIMIT_CPU)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        limit = int(usage.ru_utime + usage.ru_stime + seconds) + 1
        if previous[1] != resource.RLIM_INFINITY:
            limit = min(limit, previous[1])
        resource.setrlimit(resource.RLIMIT_CPU, (limit, previous[1]))
    except (OSError, ValueError):
        return None
    return previous


def _restore_cpu(previous: tuple[int, int] | None) -> None:
    if previous is not None and resource is not None:
        resource.setrlimit(resource.RLIMIT_CPU, previous)


def _cap_memory(extra: int) -> None:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[0])
        limit = pages * os.sysconf("SC_PAGE_SIZE") + extra
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError, AttributeError):  # not Linux: no cap
        pass


def program() -> LoadedProgram:
    if _load_problem is not None:
        raise ProgramRefused(f"the program cannot be loaded: {_load_problem}")
    if _program is None:
        raise RuntimeError("the worker has no program loaded")
    return _program


def limits() -> Limits:
    return _limits


@contextmanager
def guarded() -> Iterator[None]:
    """Run the user's program: the time limit and (in a worker) the guard. A refusal the
    program caught is raised again when it returns."""
    global _guard_active, _refusal
    if signal.getsignal(signal.SIGALRM) is not _on_alarm:  # the program replaced it
        signal.signal(signal.SIGALRM, _on_alarm)
    _refusal = None
    cpu = _limit_cpu(_limits.time_limit)
    signal.setitimer(signal.ITIMER_REAL, _limits.time_limit)
    _guard_active = True
    try:
        yield
    finally:
        _guard_active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        _restore_cpu(cpu)
    if _refusal is not None:
        caught, _refusal = _refusal, None
        raise BlockedOperation(caught)


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
    except BaseException:
        pool.close()
        # the pool's queues sit in reference cycles: free their named semaphores now, as
        # the console script leaves with os._exit (else the resource tracker warns)
        gc.collect()
        raise
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
            # the first answer comes once a worker has started and loaded the program
            try:
                problem = self.executor.submit(_ping).result(timeout=_START_TIMEOUT)
            except cf.TimeoutError:
                problem = (f"no worker process had started and loaded it after "
                           f"{_START_TIMEOUT} s (its top level may be stuck where no "
                           f"signal reaches it)")
            except Exception as exc:
                problem = (f"a worker process died while starting or while loading it "
                           f"({type(exc).__name__}; its top level may have crashed the "
                           f"process or used more CPU time than the time limit); a script "
                           f"that calls anonkit.testdata.generate must guard its entry point "
                           f"with `if __name__ == '__main__':`")
            if problem is not None:
                self.close()
                raise ProgramRefused(f"the program cannot be loaded: {problem}")
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


#: seconds the first worker has to start and load the program
_START_TIMEOUT = 120


def _ping() -> str | None:
    """Worker side: why the program could not be loaded, or None."""
    return _load_problem


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
