"""Conversion of input values the runtime cannot take as they are (another
dtype, not C-contiguous, no buffer protocol or DLPack), and of strings to and
from string tables (kiln.h, KILN_DTYPE_STRING). Called by the extension
(inputs.cpp, which counts each input in kiln._stats()["input_copies"], and
session.cpp)."""

from __future__ import annotations

from typing import Any, Tuple

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


def string_table(value: Any, name: str) -> Tuple[bytes, Tuple[int, ...]]:
    """The string table of ``value``'s strings (row-major) and its shape, for
    string input ``name``: a numpy str array (``<U``; its trailing NULs are
    numpy's padding), a bytes array (``S``, passed as they are), or what
    numpy makes one of (lists of str, object arrays of str or bytes). Strings
    are encoded as UTF-8."""
    try:
        array = np.asarray(value)
    except Exception as e:  # noqa: BLE001 (whatever the object raises)
        raise TypeError("input '%s': cannot read a %s as an array: %s" % (name, type(value).__name__, e)) from e
    items = array.ravel().tolist()
    if array.dtype.kind not in "USO" or (array.dtype.kind == "O" and
                                         not all(isinstance(s, (str, bytes)) for s in items)):
        raise Error("input '%s' takes strings (a numpy str array); %s data is not" % (name, array.dtype),
                    "INVALID_ARGUMENT")
    encoded = []
    for i, s in enumerate(items):
        try:
            encoded.append(s.encode("utf-8") if isinstance(s, str) else bytes(s))
        except UnicodeEncodeError as e:
            raise Error("input '%s': string %d is not valid Unicode (%s)" % (name, i, e.reason),
                        "INVALID_ARGUMENT") from e
    offsets = np.zeros(len(encoded) + 1, dtype=np.uint64)
    offsets[1:] = np.cumsum(np.fromiter((len(b) for b in encoded), dtype=np.uint64, count=len(encoded)),
                            dtype=np.uint64)
    if offsets[-1] > 0xFFFFFFFF:
        raise Error("input '%s': its strings hold %d bytes of UTF-8, more than a string tensor can (4 GiB - 1)"
                    % (name, int(offsets[-1])), "INVALID_ARGUMENT")
    return offsets.astype("<u4").tobytes() + b"".join(encoded), tuple(array.shape)


def string_array(table: bytearray, size: int, shape: Tuple[int, ...]) -> np.ndarray:
    """A numpy str array of ``shape`` from the first ``size`` bytes of
    ``table``, a string table the runtime checked: ``<U{k}``, k the longest
    string's length (at least 1). Ill-formed UTF-8 reads as U+FFFD; a
    string's trailing NULs are lost (numpy strips them)."""
    count = int(np.prod(shape, dtype=np.int64))
    offsets = np.frombuffer(table, dtype="<u4", count=count + 1).astype(np.int64)
    data = bytes(memoryview(table)[4 * (count + 1):size])
    strings = [data[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") for i in range(count)]
    return np.array(strings, dtype=str).reshape(shape)
