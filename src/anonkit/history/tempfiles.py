"""The temporary files of a publish, and the lock that tells a live publisher's from a dead one's.

A publish of ``OUTPUT`` (in folder ``D``) gets a token ``<pid>-<16 random hex digits>`` and
creates, in ``D``:

- its lock file ``.anonkit-lock-<token>``, created exclusively and locked at once
  (``flock``, exclusive) for as long as the publisher lives: the kernel releases the lock
  when the process ends, however it ends, and it is visible from every PID namespace that
  shares the folder (containers sharing a volume), unlike a process id;
- its release file ``.anonkit-tmp-<token>-<OUTPUT name>`` and one
  ``.anonkit-tmp-<token>-<OUTPUT name>.<table>`` per auxiliary table, created empty with
  mode 0600 (less if the umask removes more) before anything is written into them, and
  the writer's own ``..anonkit-tmp-<token>-....<8 hex digits>.tmp`` while it writes.

Before committing, the publisher writes the history's location into its lock file: from
then on its release file may be the pending file of a committed release
(see :mod:`anonkit.history.publish`).

Clean-up (:func:`remove_orphans`, run by every publish into ``D``): a lock file whose lock
can be taken belongs to a publisher that has ended. Its files -- the names above with its
exact token, nothing else -- are deleted, then the lock file, unless the lock file names a
history (the publisher got as far as committing) and either it is another history (whose
next open finishes or abandons the publish) or the release file is still pending in this
one (:meth:`HistoryStore.recover` moves it to its name). A live publisher's files are never
touched, and temporary files without a lock file (none of ours) are left alone.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import warnings
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

TMP_PREFIX = ".anonkit-tmp-"
LOCK_PREFIX = ".anonkit-lock-"
_TOKEN = r"\d+-[0-9a-f]{16}"
_LOCK_NAME = re.compile(rf"{re.escape(LOCK_PREFIX)}({_TOKEN})")
_TMP_NAME = re.compile(rf"(?:{re.escape(TMP_PREFIX)}({_TOKEN})-.+"
                       rf"|\.{re.escape(TMP_PREFIX)}({_TOKEN})-.+\.[0-9a-f]{{8}}\.tmp)")


def token_of(name: str) -> str | None:
    """The publish token in the name of one of its temporary files (None: not ours)."""
    match = _TMP_NAME.fullmatch(name)
    if match is None:
        return None
    return match.group(1) or match.group(2)


class PublishFiles:
    """The temporary files of one live publish, and its lock (see the module)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        for _ in range(100):
            self.token = f"{os.getpid()}-{secrets.token_hex(8)}"
            self.lock_path = directory / f"{LOCK_PREFIX}{self.token}"
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)  # ours: created exclusively, nobody waits
            # a cleaner that found the file before we locked it may have removed it
            if _same_file(fd, self.lock_path):
                self._fd: int | None = fd
                return
            os.close(fd)
        raise OSError(f"could not create a lock file in {directory}")  # pragma: no cover

    def path(self, name: str) -> Path:
        """The temporary name of the file to be published as ``name`` (in ``directory``)."""
        return self.directory / f"{TMP_PREFIX}{self.token}-{name}"

    def reserve(self, path: Path) -> Path:
        """Create ``path`` empty with mode 0600 (a writer writing over it keeps the mode)."""
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return path

    def mark(self, history: str) -> None:
        """Note, before committing, which history the release file may be pending in."""
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, history.encode("utf-8", "surrogateescape"), 0)
        os.fsync(self._fd)

    def close(self, keep: bool = False) -> None:
        """End the publish: remove the lock file (unless ``keep``: a release file is left
        pending) and release the lock."""
        if self._fd is None:
            return
        try:
            if not keep:
                with suppress(OSError):
                    self.lock_path.unlink()
        finally:
            os.close(self._fd)
            self._fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def remove_orphans(directory: Path, history: str,
                   pending: Callable[[], Iterable[str]]) -> list[Path]:
    """Delete the temporary files of ended publishes in ``directory`` (see the module).
    ``history`` is this history's location, ``pending`` gives the paths of its pending
    release files. Returns the files deleted."""
    try:
        names = [p.name for p in directory.iterdir()]
    except OSError:
        return []
    removed: list[Path] = []
    foreign: list[Path] = []
    pending_paths: set[str] | None = None
    for name in names:
        match = _LOCK_NAME.fullmatch(name)
        if match is None:
            continue
        lock_path = directory / name
        try:
            fd = os.open(lock_path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue  # removed meanwhile, or not ours to open
        try:
            if os.fstat(fd).st_uid != os.getuid():
                # in a shared folder another user's file is not ours to judge or delete
                # (and one planted there must not stop this publish)
                foreign.append(lock_path)
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live publisher holds it
            if not _same_file(fd, lock_path):
                continue  # cleaned by another process meanwhile
            marker = os.pread(fd, 4096, 0).decode("utf-8", "surrogateescape")
            if marker and marker != history:
                continue  # may be pending in another history: its next open decides
            token = match.group(1)
            files = [directory / n for n in names if token_of(n) == token]
            if marker:
                if pending_paths is None:
                    pending_paths = set(pending())
                if any(str(f) in pending_paths for f in files if f.exists()):
                    continue  # a committed release's file: recover() moves it
            for f in files:
                try:
                    if f.lstat().st_uid != os.getuid():
                        foreign.append(f)
                        continue
                    f.unlink()
                    removed.append(f)
                except FileNotFoundError:
                    pass
                except OSError:
                    foreign.append(f)
            try:
                lock_path.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                foreign.append(lock_path)
        finally:
            os.close(fd)
    if foreign:
        warnings.warn(OrphanWarning(
            f"{len(foreign)} temporary or lock file(s) of anonkit in {directory} belong to "
            f"another user or cannot be removed (e.g. {foreign[0].name}); they were left "
            f"alone. Ask their owner, or publish into a folder only you write to"),
            stacklevel=2)
    return removed


class OrphanWarning(UserWarning):
    """Files of ended publishes that this user cannot or must not remove."""


def drop_lock(pending_file: Path) -> None:
    """After a pending release file was moved to its name: remove its publish's lock file
    and leftover temporary files, if the publisher has ended."""
    token = token_of(pending_file.name)
    if token is None:
        return
    lock_path = pending_file.with_name(f"{LOCK_PREFIX}{token}")
    try:
        fd = os.open(lock_path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # the publisher is alive: it removes its own
        if not _same_file(fd, lock_path):
            return
        with suppress(OSError):
            for p in pending_file.parent.iterdir():
                if token_of(p.name) == token and p != pending_file:
                    with suppress(FileNotFoundError):
                        p.unlink()
        with suppress(FileNotFoundError):
            lock_path.unlink()
    finally:
        os.close(fd)
