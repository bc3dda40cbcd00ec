"""Numbers as people read and give them, and as JSON carries them: one writing and one
reading of each, so a threshold, a parameter or a label value shows the same everywhere
(the command line, the reports, the history) and a whole number given anywhere is refused
or accepted alike.

Imports no numpy at load: the command line parses its options before the heavy modules
are loaded. A numpy scalar can only exist once numpy is loaded, so it is recognised
through ``sys.modules``.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from typing import TYPE_CHECKING, Literal

from anonkit.errors import InputError

if TYPE_CHECKING:
    import numpy as np

#: where a value comes from: text typed on the command line, a TOML value, or a Python
#: value. Only command-line text is read as a number: in a job file or from Python, "5" is
#: text, not 5.
Source = Literal["cli", "toml", "python"]
SOURCES: tuple[Source, ...] = ("cli", "toml", "python")

#: whole floats below this are written as integers: every integer up to it is a float, so
#: the integer text is the float and nothing more; beyond it, ``1e+17`` rather than a run
#: of digits that claims a precision the value does not have
WHOLE_AS_INTEGER = 2.0**53

_WHOLE_TEXT = re.compile(r"[+-]?\d+")


def _numpy_scalar(value: object) -> object:
    """``value`` as the Python scalar it stands for when it is a numpy scalar."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.generic):
        return value.item()
    return value


def _float_text(x: float) -> str:
    if math.isfinite(x) and x.is_integer() and abs(x) < WHOLE_AS_INTEGER:
        return str(int(x))  # (-0.0 too: "0", as labels always wrote it)
    return repr(x)  # shortest text that reads back as the same float; nan, inf, -inf


def exact_number(value: object) -> str:
    """A number as given, never rounded: ``5`` for 5.0, ``0.12345678`` for 0.12345678
    (the shortest text that reads back as the same float), ``1000000000`` for 1e9; a
    whole float from 2**53 on as Python writes it (``1e+17``). Anything else as ``str``."""
    value = _numpy_scalar(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    return str(value)


def display_number(value: object, digits: int = 4) -> str:
    """A measured figure as a console line shows it: rounded to ``digits`` significant
    digits (``exp(entropy) = 5`` for 5.000000000000001, ``β = 1.494`` for
    1.4939728988278327), but never in its integer part (30162.4 is 30162). Only for what
    was measured: a threshold a person gave is shown by :func:`exact_number`, never
    rounded."""
    value = _numpy_scalar(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return exact_number(value)
    if isinstance(value, int) or not math.isfinite(value) or value == 0:
        return exact_number(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return _float_text(round(value, decimals))


def measured_text(measured: object, required: object, passed: bool) -> str:
    """A measured level beside its threshold: :func:`display_number`, with as many more
    digits as it takes for the shown level to sit on the same side of the threshold as
    the level itself (a failing 0.999999999 against 1 is never shown as 1, a passing
    2.00004 against 2.00003 never as 2); only a passing level within the models'
    tolerance (1e-9, relative) of its threshold may be shown as equal to it
    (``exp(entropy) = 5`` for 5.000000000000001)."""
    level, threshold = _numpy_scalar(measured), _numpy_scalar(required)
    if not (isinstance(level, float) and isinstance(threshold, int | float)
            and math.isfinite(level) and math.isfinite(threshold)) or level == 0:
        return exact_number(level)

    def side(x: float) -> int:
        return (x > threshold) - (x < threshold)

    near = abs(level - threshold) <= 1e-9 * max(1.0, abs(threshold))
    for digits in (4, 6, 9, 12, 15):
        shown = round(level, max(0, digits - 1 - math.floor(math.log10(abs(level)))))
        if side(shown) == side(level) or (passed and near and shown == threshold):
            return _float_text(shown)
    return exact_number(level)


def exact_numbers(values: np.ndarray) -> np.ndarray:
    """:func:`exact_number` of every entry of a numeric array, as an object array of str;
    vectorised, as a column may hold a million distinct values."""
    import numpy as np

    raw = np.asarray(values)
    if raw.dtype.kind in "iu":
        return raw.astype(str).astype(object)
    f = raw.astype(np.float64)
    whole = np.isfinite(f) & (f == np.round(f)) & (np.abs(f) < WHOLE_AS_INTEGER)
    text = np.empty(len(f), dtype=object)
    text[whole] = f[whole].astype(np.int64).astype(str)
    text[~whole] = [repr(float(x)) for x in f[~whole]]
    return text


def json_number(value: object) -> object:
    """``value`` ready for :func:`json.dumps`: numpy scalars as Python ones, a whole float
    as the integer :func:`exact_number` writes (below 2**53), NaN as None (JSON has no NaN;
    a missing value). Infinities stay floats. Anything that is no number is returned as
    it is."""
    value = _numpy_scalar(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer() and abs(value) < WHOLE_AS_INTEGER:
            return int(value)
    return value


def stored_number(value: object) -> object:
    """:func:`json_number`, with every whole float as its integer whatever its magnitude:
    the form values always had in the history's stored labels, the knowledge it reports
    and the code-tree summaries (they are compared with what was stored before)."""
    value = json_number(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def describe(value: object) -> str:
    """How a refusal quotes a value: text says it is text (``'5' (text)``), so a job
    file's ``k = "5"`` is told apart from ``k = 5``; a numpy scalar as the number it is."""
    value = _numpy_scalar(value)
    return repr(value) if not isinstance(value, str) else f"{value!r} (text)"


def whole_number(name: str, value: object, source: Source, minimum: int) -> int:
    """``value`` as an int >= ``minimum``, or an :class:`InputError` naming ``name``.

    Never rounded nor guessed: 5.0, 4.9, True and (but for command-line text) "5" are
    refused, so ``-k 5.0``, ``k = 5.0`` in a job file and ``Mondrian(k=5.0)`` fail alike.
    Any integral type counts (numpy's too), bool does not."""
    if isinstance(value, str) and source == "cli" and _WHOLE_TEXT.fullmatch(value.strip()):
        number = int(value.strip())
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
        number = int(value)
    else:
        raise InputError(f"{name} must be a whole number >= {minimum}, got {describe(value)}")
    if number < minimum:
        raise InputError(f"{name} must be a whole number >= {minimum}, got {number}")
    return number


def number_from_text(text: str) -> int | float:
    """A number written in text (a model text's ``5`` or ``0.2``): an int when written as
    a whole number, so a whole-number parameter reads it as the command line does
    (``k=5`` is 5, ``k=5.0`` is refused); a float otherwise. ValueError if no number."""
    stripped = text.strip()
    if _WHOLE_TEXT.fullmatch(stripped):
        return int(stripped)
    return float(stripped)
