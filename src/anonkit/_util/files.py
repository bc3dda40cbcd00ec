"""Files written whole or not at all, and their digests.

Every file anonkit writes (a release, a report, a fragment of a distributed release, a
history, its secret) is written to a temporary file beside it, flushed to disk, then
renamed over its name (or linked to it, when it must not replace anything) and the folder
flushed: a reader sees the old file or the new one, never half of one, and a crash leaves
at most a hidden ``.<name>.<8 hex digits>.tmp`` file. That temporary name is relied on:
a publish's clean-up recognises its writer's temporary files by it
(:mod:`anonkit.history.tempfiles`).

The publish protocol (:mod:`anonkit.history.publish`) keeps its own temporary files,
reserved under a lock and committed to the history before they are renamed; it takes
:func:`fsync_directory` and :func:`sha256_file` from here.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from anonkit.errors import InputError

__all__ = [
    "NamedPath",
    "Refusal",
    "atomic_write",
    "fsync_directory",
    "refuse_collisions",
    "same_file",
    "set_output_mode",
    "sha256_file",
    "system_error",
    "write_atomic",
]

#: a path and what it is to the user ("the input", "the report", "release 2 of 'ward'")
NamedPath = tuple[Path, str]

#: the permission bits of a new output file: the owner's only (a release, a report and an
#: audit list what is not for everyone); :func:`set_output_mode` (``anonkit --mode``) widens
#: them. A file replaced keeps its own.
_output_mode = 0o600


def set_output_mode(mode: int | str) -> int:
    """Set the permission bits of the output files written from now on (``0o640``, or
    octal text ``"640"``); they must let the owner read and write. Returns the mode."""
    try:
        value = int(mode, 8) if isinstance(mode, str) else int(mode)
    except ValueError:
        raise InputError(f"--mode {mode!r} is not an octal mode; give e.g. 600 or 640"
                         ) from None
    if not 0 <= value <= 0o777 or value & 0o600 != 0o600:
        raise InputError(f"--mode {mode!r}: give permission bits between 600 and 777 that "
                         f"let the owner read and write (e.g. 600, 640 or 644)")
    global _output_mode
    _output_mode = value
    return value


#: the error to raise when the temporary file cannot be created, from the file to be
#: written and the operating system's error
Refusal = Callable[[Path, OSError], Exception]


@contextmanager
def atomic_write(path: str | Path, *, mode: int | None = None, exclusive: bool = False,
                 refuse: Refusal | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` for a writer that opens files by name
    (Parquet, the CSV writer, SQLite); on success it is flushed to disk and put at
    ``path`` in one step, on any error it is removed and ``path`` is left as it was.

    The temporary file exists (empty) when the block starts; writers may overwrite it.
    ``mode``: the new file's permission bits (e.g. ``0o600``; the umask still applies);
    None: those of an existing ``path``, else the output mode (0600 unless
    :func:`set_output_mode` widened it) less the umask. ``exclusive``:
    link instead of rename, so an existing ``path`` is never replaced
    (:class:`FileExistsError`, nothing written). ``refuse``: the error when the
    temporary file cannot be created; None for a file the user named as output, which is
    checked first (its folder exists, it is no folder) and refused with an
    :class:`InputError`.
    """
    path = Path(path)
    with _put_in_place(path, mode, exclusive, refuse) as (tmp, fd):
        os.close(fd)  # the writer opens the temporary file by its name
        yield tmp
        descriptor = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_atomic(path: str | Path, data: str | bytes, *, mode: int | None = None,
                 exclusive: bool = False, refuse: Refusal | None = None) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` as :func:`atomic_write`
    does. It is written through the descriptor that created the temporary file, so no
    other process can put another file at that name before it is written (a secret in a
    shared folder). Returns the path."""
    path = Path(path)
    with _put_in_place(path, mode, exclusive, refuse) as (_, fd), \
            open(fd, "wb") as fh:  # closes the descriptor
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())
    return path


@contextmanager
def _put_in_place(path: Path, mode: int | None, exclusive: bool, refuse: Refusal | None
                  ) -> Iterator[tuple[Path, int]]:
    """The temporary file (its path and an open descriptor, which the block closes) and,
    once the block has written and flushed it, its rename (or link) and the folder's
    flush."""
    if refuse is None:
        _check_output(path)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     _output_mode if mode is None else mode)
    except OSError as exc:  # read-only file system, /proc, no space left, permissions
        raise (refuse or _refuse_output)(path, exc) from None
    try:
        if mode is None:
            try:
                with suppress(FileNotFoundError):
                    os.chmod(tmp, path.stat().st_mode & 0o7777)
            except BaseException:
                os.close(fd)
                raise
        yield tmp, fd
        if exclusive:
            os.link(tmp, path)  # atomic, and fails if the file exists
        else:
            os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            tmp.unlink()
        raise
    if exclusive:
        tmp.unlink(missing_ok=True)
    # make the rename itself durable; not possible everywhere, and the file is in place
    with suppress(OSError):
        fsync_directory(path.parent)


def _check_output(path: Path) -> None:
    """Refuse, before anything is written, an output whose folder is missing or which is
    a folder itself."""
    if not path.parent.is_dir():
        raise InputError(f"output directory {path.parent} does not exist; create it first")
    if path.is_dir():
        raise InputError(f"output path {path} is a directory; give a file name")


def _refuse_output(path: Path, exc: OSError) -> Exception:
    reason = (exc.strerror or str(exc)).lower()
    return InputError(f"cannot write to {path.parent}: {reason}; choose another folder")


def system_error(path: Path, exc: OSError) -> OSError:
    """A refusal (see :func:`atomic_write`) that raises the operating system's own error:
    for a file the user did not name as an output (a history's secret, a fragment of a
    distributed release), to which an output's checks and wording do not apply."""
    return exc


def fsync_directory(path: str | Path) -> None:
    """Make a rename in ``path`` durable (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, as hex (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: the same path once resolved (a symbolic link
    or ``..`` included), or, when both exist, the same device and inode (a hard link)."""
    a, b = Path(a).absolute(), Path(b).absolute()
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_collisions(writes: Sequence[NamedPath], kept: Sequence[NamedPath] = ()) -> None:
    """The one rule for every path a command writes, checked before anything is written:
    each must differ from every file the command must keep (``kept``: its inputs, a
    history, its secret, journals and backups, the files of recorded releases) and from
    every other path it writes. An :class:`InputError` names both paths."""
    for i, (path, what) in enumerate(writes):
        for other, other_what in writes[:i]:
            if same_file(path, other):
                raise InputError(
                    f"the {what} {path} and the {other_what} {other} are one file: one "
                    f"would be lost, so nothing was written. Give them different paths")
        for other, other_what in kept:
            if same_file(path, other):
                raise InputError(
                    f"the {what} {path} is {other_what} ({other}); writing it would destroy "
                    f"that file, so nothing was written. Give the {what} another path")
