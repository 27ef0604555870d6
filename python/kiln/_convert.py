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


# ONNX's narrow element types (kiln.h: float8, float4e2m1, e8m0, int4, uint4,
# int2, uint2; one byte an element): ml_dtypes' names, which the extension
# gives, and the numpy dtype of their bytes (int8 for the signed integers).
NARROW_BYTES = {
    "float8_e4m3fn": "uint8", "float8_e4m3fnuz": "uint8", "float8_e5m2": "uint8", "float8_e5m2fnuz": "uint8",
    "uint4": "uint8", "int4": "int8", "float4_e2m1fn": "uint8", "float8_e8m0fnu": "uint8",
    "uint2": "uint8", "int2": "int8",
}

try:  # ml_dtypes gives numpy dtypes for them; without it they are their bytes
    import ml_dtypes as _ml_dtypes  # noqa: F401 (importing registers the dtypes with numpy)
except ImportError:
    _ml_dtypes = None


def _ml_type(name: str):
    """ml_dtypes' type for narrow type ``name``, or None (no ml_dtypes, or
    one too old to have it: int2, uint2, float4_e2m1fn and float8_e8m0fnu
    came with ml_dtypes 0.5)."""
    return getattr(_ml_dtypes, name, None) if _ml_dtypes is not None else None


def tensor_dtype(name: str) -> np.dtype:
    """The numpy dtype of a tensor whose dtype the extension names ``name``:
    a narrow type's is ml_dtypes' when ml_dtypes is importable, else its
    bytes' (uint8, int8)."""
    if name in NARROW_BYTES:
        t = _ml_type(name)
        return np.dtype(t) if t is not None else np.dtype(NARROW_BYTES[name])
    return np.dtype(name)


def narrow_input(value: Any, name: str) -> Any:
    """An input value for a tensor of narrow type ``name`` as its bytes (the
    extension's uint8/int8): an array of ml_dtypes' type is viewed (no copy);
    arrays of the bytes' type pass as they are; with ml_dtypes anything else
    numpy converts to the type (``astype``: rounded to nearest even, as
    ml_dtypes does), without it the extension converts to the bytes' type."""
    raw = np.dtype(NARROW_BYTES[name])
    if _ml_type(name) is None:
        return value
    want = np.dtype(_ml_type(name))
    if isinstance(value, np.ndarray):
        if value.dtype == want:
            return np.ascontiguousarray(value).view(raw)
        if value.dtype in (np.dtype(np.uint8), np.dtype(np.int8)):
            return value
    try:
        return np.ascontiguousarray(np.asarray(value).astype(want)).view(raw)
    except (TypeError, ValueError) as e:
        raise Error("input of %s: cannot convert a %s to it: %s" % (name, type(value).__name__, e),
                    "INVALID_ARGUMENT") from e
