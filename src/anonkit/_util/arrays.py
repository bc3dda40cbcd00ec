"""Named arrays as one blob (a sequential method's state kept in the history)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Collection, Mapping

import numpy as np


def pack_arrays(arrays: Mapping[str, np.ndarray], *, stored: Collection[str] = ()) -> bytes:
    """``arrays`` as ``.npz`` bytes (``np.load`` reads them), each deflated at the fastest
    level, or, when named in ``stored``, kept as they are: random bytes such as pseudonyms
    do not compress, and deflating a million records' state at the default level cost
    seconds per release."""
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", allowZip64=True) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asanyarray(array), allow_pickle=False)
            if name in stored:
                archive.writestr(f"{name}.npy", buffer.getvalue(),
                                 compress_type=zipfile.ZIP_STORED)
            else:
                archive.writestr(f"{name}.npy", buffer.getvalue(),
                                 compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)
    return sink.getvalue()
