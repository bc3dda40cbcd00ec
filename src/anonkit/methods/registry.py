"""The one registry of anonymization methods, behind ``anonymize``, ``release publish``, the
job file and the Python API.

Each method declares (:class:`Method`) its typed options, whether it is one-shot or
sequential, its release kind and the threat model it claims against repeated releases. A
one-shot method carries its ``anonymize`` function; a sequential method's publishing engine
lives with the history (:mod:`anonkit.history.engines`), which this layer never imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from anonkit.errors import InputError
from anonkit.methods.options import Option

if TYPE_CHECKING:  # types only: declaring and listing methods loads no pandas
    import pandas as pd

    from anonkit.assemble import Progress
    from anonkit.data.schema import Schema
    from anonkit.release import Release

#: ``anonymize(df, schema, options, progress=None) -> Release``: a one-shot method's run
Anonymize: TypeAlias = "Callable[[pd.DataFrame, Schema, dict[str, Any], Progress | None], Release]"


@dataclass(frozen=True)
class Method:
    """A registered anonymization method.

    ``anonymize(df, schema, options, progress) -> Release`` runs it one-shot on a table
    (None for a method that only publishes with a history). Published with a history, a
    one-shot method ignores the earlier releases (the history's gate then judges the
    result); a sequential one continues from them with its engine. ``typed``: the options
    are checked against ``options``; False for methods registered with raw Python options
    (test methods).
    """

    name: str
    summary: str
    kind: str  # a ReleaseKind value
    sequential: bool
    threat_model: str  # a ThreatModel value
    options: tuple[Option, ...] = ()
    #: the one-shot run, as ``"module:function"``: loaded on first use, like an entry
    #: point, so that listing the methods and parsing a job load no algorithm
    runner: str = ""
    #: or the function itself (a method registered from Python, e.g. in a test)
    function: Anonymize | None = None
    typed: bool = True
    #: the auxiliary tables its releases carry (``ke``: ``groups``), written beside the
    #: release as ``<stem>.<name>.csv``: known before the run, so that every path a command
    #: will write is checked before it writes any
    auxiliary: tuple[str, ...] = ()

    @property
    def anonymize(self) -> Anonymize | None:
        """The one-shot run (None for a method that only publishes with a history)."""
        if self.function is not None or not self.runner:
            return self.function
        module, _, name = self.runner.partition(":")
        run: Anonymize = getattr(importlib.import_module(module), name)
        return run

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def parse_options(self, given: Mapping[str, object], source: str) -> dict[str, Any]:
        """Typed option values from ``given`` (name -> raw value); an option the method
        does not take is an error naming the method's options."""
        if not self.typed:
            return dict(given)
        out: dict[str, Any] = {}
        for name, value in given.items():
            option = self.option(name)
            if option is None:
                known = ", ".join(o.flag if source == "cli" else o.name for o in self.options)
                # another method's option: shown as that method shows it, with who takes it
                takers = [m.name for m in _REGISTRY.values() if m.option(name) is not None]
                other = next((m.option(name) for m in _REGISTRY.values()
                              if m.option(name) is not None), None)
                shown = (other.flag if other is not None else "--" + name.replace("_", "-")) \
                    if source == "cli" else repr(name)
                names = [repr(t) for t in takers]
                whose = "" if not names else f" (method {names[0]} takes it)" \
                    if len(names) == 1 else \
                    f" (methods {', '.join(names[:-1])} and {names[-1]} take it)"
                raise InputError(f"method {self.name!r} has no option {shown}{whose}; its "
                                 f"options are: {known or 'none'}")
            out[name] = option.parse(value, source)
        return out


_REGISTRY: dict[str, Method] = {}


def register(method: Method, *, replace: bool = False) -> Method:
    if method.name in _REGISTRY and not replace:
        raise ValueError(f"a method named {method.name!r} is already registered")
    _REGISTRY[method.name] = method
    return method


def unregister(name: str) -> None:
    """Forget method ``name`` (a method registered for a test or a session)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> Method:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown method {name!r}; the methods are: "
                         f"{', '.join(names())}") from None


def names() -> list[str]:
    return sorted(_REGISTRY)


def methods() -> list[Method]:
    return [_REGISTRY[n] for n in names()]


def all_options() -> list[Option]:
    """Every option of every method, each name once (the command line declares them all
    and refuses those the chosen method does not take)."""
    seen: dict[str, Option] = {}
    for method in methods():
        for option in method.options:
            seen.setdefault(option.name, option)
    return list(seen.values())


def method_help(method: Method) -> str:
    """A method and its options, as ``anonkit methods`` prints them."""
    lines = [f"{method.name}  ({'sequential' if method.sequential else 'one-shot'}; "
             f"{method.kind} release; threat model: {method.threat_model})",
             f"    {method.summary}"]
    for option in method.options:
        value = "" if option.switch else f" {option.metavar or 'VALUE'}"
        flags = ", ".join(option.flags)
        lines.append(f"    {flags}{value}  [{option.name}: {option.kind}]")
        lines.append(f"        {option.help}")
    return "\n".join(lines)


def parse_job_options(method: Method, config: Mapping[str, object],
                      cli: Mapping[str, object]) -> dict[str, Any]:
    """A method's typed options from a job file (TOML values) overridden by the command
    line (text); repeatable options add up (the file's, then the command line's)."""
    from_file = method.parse_options(config, "toml")
    from_cli = method.parse_options(cli, "cli")
    out = dict(from_file)
    for name, value in from_cli.items():
        option = method.option(name)
        if option is not None and option.multiple and name in out:
            if isinstance(value, dict):
                out[name] = {**out[name], **value}
            else:
                out[name] = [*out[name], *value]
        else:
            out[name] = value
    return out
