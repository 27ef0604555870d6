"""kiln.compile: kilnc's pipeline in process (no subprocess), options as
keyword arguments named after kilnc's flags (docs/python.md)."""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _kiln

PathLike = Union[str, "os.PathLike[str]"]

_VULKAN_FEATURES = {"none": 0, "int64": 1, "float64": 2, "all": 3}
_BYTE_SUFFIXES = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}


def _max_arena(value: Union[int, str]) -> int:
    """kilnc's --max-arena: an int, or "4096", "512M", "4G", "1T"."""
    if isinstance(value, bool):
        raise TypeError("max_arena takes a byte count (int) or a string such as '512M', not a bool")
    if isinstance(value, int):
        count = value
    elif isinstance(value, str):
        m = re.fullmatch(r"([0-9]+)([KMGT]?)", value)
        if not m:
            raise ValueError("max_arena takes a positive byte count such as 4096, '512M' or '4G', not %r" % value)
        count = int(m.group(1)) << _BYTE_SUFFIXES[m.group(2)]
    else:
        raise TypeError("max_arena takes an int or a str, not %s" % type(value).__name__)
    if not 0 < count < 1 << 64:
        raise ValueError("max_arena must be between 1 and 2**64 - 1 bytes, not %d" % count)
    return count


def _is_size(d: Any) -> bool:
    return isinstance(d, int) and not isinstance(d, bool) and d > 0


def _dim(d: Any) -> Any:
    """A size (int) or a range: (lo, hi) or "lo..hi" (kilnc's LO..HI) -> int or (lo, hi); None if neither."""
    if isinstance(d, str) and ".." in d:
        lo, _, hi = d.partition("..")
        try:
            d = (int(lo), int(hi))
        except ValueError:
            return None
    if isinstance(d, (tuple, list)) and len(d) == 2 and all(_is_size(v) for v in d) and d[0] <= d[1]:
        return d[0] if d[0] == d[1] else (d[0], d[1])
    return d if _is_size(d) else None


def _input_shapes(shapes: Optional[Mapping[str, Sequence[Any]]]) -> dict:
    out = {}
    for name, dims in (shapes or {}).items():
        if not isinstance(name, str):
            raise TypeError("input_shapes: names are str, not %s" % type(name).__name__)
        dims = tuple(dims)
        parsed = tuple(_dim(d) for d in dims)
        if not dims or any(d is None for d in parsed):
            raise ValueError("input_shapes[%r]: a shape is a non-empty sequence of positive ints or ranges "
                             "((lo, hi) or 'lo..hi', lo <= hi), not %r" % (name, dims))
        out[name] = parsed
    return out


def _input_values(values: Optional[Mapping[str, Any]]) -> dict:
    """kilnc's --input-value: name -> (lo, hi) from (lo, hi) or 'lo..hi', 0 <= lo <= hi <= 2**31."""
    out = {}
    for name, v in (values or {}).items():
        if not isinstance(name, str):
            raise TypeError("input_values: names are str, not %s" % type(name).__name__)
        if isinstance(v, str) and ".." in v:
            lo_text, _, hi_text = v.partition("..")
            v = (int(lo_text), int(hi_text)) if lo_text.strip().isdigit() and hi_text.strip().isdigit() else None
        ok = isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                  for x in v)
        if not ok or not 0 <= v[0] <= v[1] <= 2 ** 31:
            raise ValueError("input_values[%r]: a value range is (lo, hi) or 'lo..hi' with "
                             "0 <= lo <= hi <= 2**31, not %r" % (name, v))
        out[name] = (int(v[0]), int(v[1]))
    return out


def _frozen_inputs(frozen: Optional[Mapping[str, Any]]) -> dict:
    """kilnc's --freeze-input: name -> serialized TensorProto (bytes), or an
    array-like that onnx.numpy_helper serializes."""
    out = {}
    for name, value in (frozen or {}).items():
        if isinstance(value, (bytes, bytearray, memoryview)):
            out[name] = bytes(value)
        else:
            import numpy as np
            from onnx import numpy_helper  # only needed here
            out[name] = numpy_helper.from_array(np.asarray(value), name).SerializeToString()
    return out


def _source(model: Any, model_dir: Optional[PathLike]):
    """(data, path, name, model_dir) for the extension."""
    if isinstance(model, (str, os.PathLike)):
        if model_dir is not None:
            raise ValueError("model_dir is for models in memory; a file's external data is read beside it")
        path = os.fsdecode(os.fspath(model))
        return None, path, path, ""
    if isinstance(model, (bytes, bytearray, memoryview)):
        data, name = bytes(model), "<bytes>"
    elif type(model).__name__ == "ModelProto" and hasattr(model, "SerializeToString"):
        data, name = model.SerializeToString(), (model.graph.name or "<ModelProto>")
    else:
        raise TypeError("compile takes an ONNX file's path, its bytes or an onnx.ModelProto, not %s"
                        % type(model).__name__)
    return data, None, name, os.fsdecode(os.fspath(model_dir)) if model_dir is not None else os.getcwd()


def compile(model: Union[PathLike, bytes, Any],
            output: Optional[PathLike] = None,
            target: str = "host",
            input_shapes: Optional[Mapping[str, Sequence[Any]]] = None,
            *,
            kernels: str = "dynamic",
            max_arena: Union[int, str] = 4 << 30,
            vulkan_features: str = "all",
            vulkan_shared_memory: bool = False,
            freeze_inputs: Optional[Mapping[str, Any]] = None,
            input_values: Optional[Mapping[str, Any]] = None,
            string_bytes: int = 64,
            sequence_lengths: Optional[Mapping[str, int]] = None,
            disable_graph_passes: Iterable[str] = (),
            sign_key: Optional[PathLike] = None,
            model_dir: Optional[PathLike] = None) -> Union[bytes, str]:
    """Compiles an ONNX model into a Kiln bundle, in this process.

    ``model`` is a path to a ``.onnx`` file, its bytes, or an
    ``onnx.ModelProto``. Without ``output`` the bundle is returned as
    ``bytes``; with it, the bundle is written there and the path is returned
    (as a str). The options are kilnc's (see docs/python.md). A model or an
    option kilnc refuses raises kiln.CompileError with kilnc's message.
    ``sign_key``: an Ed25519 private key (PEM) that signs the bundle
    (kilnc --sign-key; Model.load(..., trusted_keys=[...]) checks it). The
    GIL is released while compiling; compilations in several threads run one
    after another. ``string_bytes``: the bytes per element a string model
    input may hold, 1..65536 (kilnc --string-bytes; docs/python.md, Strings).
    ``sequence_lengths``: {name: N} for each sequence model input, 0..4096
    (kilnc --sequence-length; Model.composites describes the result).
    """
    lengths = {}
    for seq, n in (sequence_lengths or {}).items():
        if not isinstance(seq, str):
            raise TypeError("sequence_lengths: names are str, not %s" % type(seq).__name__)
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 4096:
            raise ValueError("sequence_lengths[%r] is an int in 0..4096, not %r" % (seq, n))
        lengths[seq] = n
    if isinstance(string_bytes, bool) or not isinstance(string_bytes, int) or not 1 <= string_bytes <= 65536:
        raise ValueError("string_bytes is an int in 1..65536, not %r" % (string_bytes,))
    if kernels not in ("dynamic", "static"):
        raise ValueError("kernels is 'dynamic' or 'static', not %r" % (kernels,))
    if vulkan_features not in _VULKAN_FEATURES:
        raise ValueError("vulkan_features is 'none', 'int64', 'float64' or 'all', not %r" % (vulkan_features,))
    if not isinstance(target, str):
        raise TypeError("target is a str ('host', 'vulkan' or 'llvm -mtriple=... -mcpu=... -mattr=...')")
    if isinstance(disable_graph_passes, str):
        disable_graph_passes = [disable_graph_passes]
    out_path = os.fsdecode(os.fspath(output)) if output is not None else ""
    if kernels == "static" and not out_path:
        raise ValueError("kernels='static' needs output=: the kernels are written beside it "
                         "(OUT.kernels.o and OUT.kernels.h, as kilnc does)")
    data, path, name, directory = _source(model, model_dir)
    bundle, kernels_object, kernels_header = _kiln.compile(
        data=data, path=path, name=name, model_dir=directory, target=target,
        input_shapes=_input_shapes(input_shapes), frozen_inputs=_frozen_inputs(freeze_inputs),
        static_kernels=kernels == "static", output=out_path, max_arena=_max_arena(max_arena),
        vulkan_features=_VULKAN_FEATURES[vulkan_features], vulkan_shared_memory=bool(vulkan_shared_memory),
        disabled_graph_passes=[str(p) for p in disable_graph_passes],
        sign_key=os.fsdecode(os.fspath(sign_key)) if sign_key is not None else "",
        input_values=_input_values(input_values), string_bytes=string_bytes, sequence_lengths=lengths)
    if not out_path:
        return bundle
    with open(out_path, "wb") as f:
        f.write(bundle)
    if kernels_object:
        stem = out_path[:-len(".kiln")] if out_path.endswith(".kiln") and len(out_path) > 5 else out_path
        with open(stem + ".kernels.o", "wb") as f:
            f.write(kernels_object)
        with open(stem + ".kernels.h", "wb") as f:
            f.write(kernels_header)
    return out_path
