"""Conversion of input values the runtime cannot take as they are (another
dtype, not C-contiguous, no buffer protocol or DLPack). Called by the
extension (inputs.cpp), which counts each call in kiln._stats()["input_copies"]."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import Error


def convert_input(value: Any, dtype: str, name: str) -> np.ndarray:
    """``value`` as a C-contiguous array of ``dtype`` (numpy's name), for input
    ``name``; kiln.Error (INVALID_ARGUMENT) when numpy's same_kind casting does
    not allow it (e.g. float to int)."""
    want = np.dtype(dtype)
    try:
        array = np.asarray(value)
    except Exception as e:  # noqa: BLE001 (whatever the object raises)
        raise TypeError("input '%s': cannot read a %s as an array: %s" % (name, type(value).__name__, e)) from e
    if array.dtype != want and not np.can_cast(array.dtype, want, casting="same_kind"):
        raise Error("input '%s' is %s; %s data does not convert to it (numpy's same_kind casting)"
                    % (name, want, array.dtype), "INVALID_ARGUMENT")
    return np.asarray(array, dtype=want, order="C")
