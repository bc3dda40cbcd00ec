"""Kernel-enforced confinement of a worker process, where Linux offers Landlock.

The audit-hook guard of :mod:`~anonkit.testdata.workers` runs inside the interpreter and can
be got round by code that means to (see there). Where the kernel has Landlock (Linux 5.13 or
later, with Landlock enabled), :func:`confine` adds a second layer the program cannot undo:
the worker process -- and anything it could start -- may then read files but not create,
write, truncate, rename, link or delete any, nor execute a program; from Landlock ABI 4 on it
may not open or accept TCP connections, and from ABI 6 on it may not signal processes outside
itself or reach abstract Unix sockets. Pipes and files already open (the pool's own channels,
stdout, stderr) keep working. The restriction is irreversible and applies to the calling
process only, so it is called in worker processes only, never in the process that writes the
output. Where Landlock is missing (another OS, an older or differently configured kernel)
:func:`confine` does nothing and says so; the audit-hook guard still applies.
"""

from __future__ import annotations

import os
import sys
from typing import Any

# syscall numbers: the same on every Linux architecture (added after the tables were unified)
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1
_PR_SET_NO_NEW_PRIVS = 38

# filesystem rights (the ones a ruleset handles and grants none of are denied)
_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_REMOVE_DIR, _REMOVE_FILE = 1 << 4, 1 << 5
_MAKE_CHAR, _MAKE_DIR, _MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = (
    1 << 6, 1 << 7, 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12)
_REFER = 1 << 13  # ABI 2: linking or renaming across folders
_TRUNCATE = 1 << 14  # ABI 3
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when there is none."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        abi = libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError, ImportError):
        return 0
    return max(int(abi), 0)


def confine() -> str:
    """Make this process unable to change the filesystem or execute programs (and, with a
    recent enough kernel, to use TCP or signal other processes). Returns what was done, as
    one line; never raises."""
    abi = landlock_abi()
    if abi < 1:
        return "no Landlock in this kernel: only the audit-hook guard applies"
    import ctypes

    fs = (_EXECUTE | _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR
          | _MAKE_REG | _MAKE_SOCK | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM)
    if abi >= 2:
        fs |= _REFER
    if abi >= 3:
        fs |= _TRUNCATE
    fields: list[tuple[str, type[ctypes.c_uint64]]] = [("handled_access_fs", ctypes.c_uint64)]
    values = [fs]
    if abi >= 4:
        fields.append(("handled_access_net", ctypes.c_uint64))
        values.append(_NET_BIND_TCP | _NET_CONNECT_TCP)
    if abi >= 6:
        fields.append(("scoped", ctypes.c_uint64))
        values.append(_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)

    class _RulesetAttr(ctypes.Structure):
        _fields_ = fields

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = _RulesetAttr(*values)
    ruleset = libc.syscall(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr),
                           ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"Landlock refused the ruleset ({os.strerror(ctypes.get_errno())})"
    try:
        _allow_devnull(libc, ruleset, _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0))
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(ruleset),
                             ctypes.c_uint32(0)) != 0:
            return f"Landlock could not be applied ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    extra = (", no TCP" if abi >= 4 else "") + (", no signals out" if abi >= 6 else "")
    return f"Landlock ABI {abi}: read-only filesystem, no exec{extra}"


def _allow_devnull(libc: Any, ruleset: int, access: int) -> None:
    """Writing to ``os.devnull`` stays allowed (programs silence output that way)."""
    import ctypes

    class _PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    try:
        fd = os.open(os.devnull, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        rule = _PathBeneath(access, fd)
        libc.syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset),
                     ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_uint32(0))
    finally:
        os.close(fd)
