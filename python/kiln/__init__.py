"""Kiln: compile ONNX models ahead of time and run the bundles (docs/python.md).

    import kiln, numpy as np
    bundle = kiln.compile("model.onnx")                    # bytes of a .kiln bundle
    with kiln.Model.load(bundle) as model, model.session(threads=2) as session:
        x = np.zeros(model.inputs[0].shape, model.inputs[0].dtype)
        outputs = session.run({model.inputs[0].name: x})   # {name: numpy array}

The compiler (kilnc) and the runtime (libkiln, through its C API) run in
this process, in the extension kiln._kiln; both release the GIL.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ._errors import CompileError, CompileWarning, Error
from . import _convert, _kiln
from ._compile import compile

__all__ = ["compile", "Model", "Session", "TensorInfo", "Composite", "Error", "CompileError", "CompileWarning",
           "__version__", "runtime_version", "abi_version"]

#: The package's version (the meson project's).
__version__: str = _kiln.__version__
#: libkiln's version and ABI number, as the library reports them
#: (kiln_version(), kiln_abi_version()).
runtime_version: str = _kiln.runtime_version()
abi_version: int = _kiln.abi_version()


class TensorInfo(NamedTuple):
    """A model input or output. For a bundle compiled with ranges
    (``compile(..., input_shapes={"x": (1, (8, 128))})``), ``shape`` is the
    largest shape and ``min_shape`` the least: an input takes any shape in
    between, and an output's actual shape is that of the array run() returns.
    Where static, ``min_shape == shape``."""
    name: str
    dtype: np.dtype
    shape: Tuple[int, ...]
    nbytes: int  # at ``shape`` (strings: the largest string table)
    min_shape: Tuple[int, ...] = ()
    #: Strings (``dtype`` numpy's ``str``): the UTF-8 bytes all of the
    #: tensor's strings may hold together (``compile(..., string_bytes=N)``
    #: gives an input N per element); 0 for other dtypes.
    string_bytes: int = 0


class Composite(NamedTuple):
    """A sequence or optional the ONNX model takes or gives, as the bundle's
    tensors hold it (docs/sequences.md): a sequence input ``xs`` of length 3
    is inputs ``xs[0]``, ``xs[1]``, ``xs[2]``; an optional ``o`` is the bool
    scalar ``o.present`` and its value ``o.value`` (or its sequence's
    tensors)."""
    name: str
    kind: str  # 'sequence' or 'optional'
    is_output: bool
    tensors: Tuple[str, ...]  # the input (or output) names holding its tensors, in order
    presence: Optional[str]  # an optional: the name of its bool scalar; None for a sequence
    holds_sequence: bool  # an optional whose value is a sequence (of ``tensors``)


def _infos(described) -> Tuple[TensorInfo, ...]:
    return tuple(TensorInfo(name, _convert.tensor_dtype(dtype), shape, nbytes, least, string_bytes)
                 for name, dtype, shape, nbytes, least, string_bytes in described)


def _narrow(described) -> Dict[str, str]:
    """{tensor name: ml_dtypes' name} of the narrow tensors (float8, int4, ...)."""
    return {name: dtype for name, dtype, *_ in described if dtype in _convert.NARROW_BYTES}


class _Closable:
    """close(), closed and the context manager, over the extension's object."""

    __slots__ = ()

    @property
    def closed(self) -> bool:
        return self._core.closed

    def close(self) -> None:
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Session(_Closable):
    """The state of one execution of a model (its arena, its threads).

    Used by one thread at a time: run() from several threads at once is
    serialized. Made by Model.session().
    """

    __slots__ = ("_core", "inputs", "outputs", "_narrow_in", "_narrow_out")

    def __init__(self, core: Any, inputs: Tuple[TensorInfo, ...], outputs: Tuple[TensorInfo, ...],
                 narrow: Tuple[Dict[str, str], Dict[str, str]] = ({}, {})) -> None:
        self._core = core
        self.inputs = inputs
        self.outputs = outputs
        # The narrow inputs and outputs (float8, int4, ...): ml_dtypes' names.
        self._narrow_in, self._narrow_out = narrow

    def run(self, inputs: Mapping[str, Any], *, copy: bool = False) -> Dict[str, np.ndarray]:
        """Runs the model once: ``{input name: array}`` -> ``{output name: numpy.ndarray}``.

        Every input must be given with the model's shape, or, for a bundle
        compiled with ranges, a shape within its range (``TensorInfo.min_shape``
        .. ``TensorInfo.shape``); the outputs then have the shapes that
        input shapes give them. Arrays (anything
        with the buffer protocol or ``__dlpack__``, on the CPU) that are
        C-contiguous with the input's dtype are read in place; others are
        converted by numpy (same_kind casting). The GIL is released while it
        runs.

        Without ``copy``, the outputs are read-only views of the session's
        memory: valid until the next run of this session, which overwrites
        them in place (they keep the session alive, even after close()).
        ``copy=True`` returns writable arrays of their own.

        String inputs take numpy str arrays (or bytes arrays, lists of str);
        string outputs are numpy str arrays of their own, with or without
        ``copy`` (docs/python.md, Strings).

        The narrow types (float8, int4, ...) are ml_dtypes' arrays when
        ml_dtypes is installed, else arrays of their bytes (uint8, int8 for
        int4 and int2; docs/python.md, Narrow types).
        """
        if self._narrow_in:
            inputs = {k: _convert.narrow_input(v, self._narrow_in[k]) if k in self._narrow_in else v
                      for k, v in inputs.items()}
        outputs = self._core.run(inputs, copy)
        for name, dtype in self._narrow_out.items():
            want = _convert.tensor_dtype(dtype)
            if name in outputs and outputs[name].dtype != want:
                outputs[name] = outputs[name].view(want)
        return outputs

    @property
    def device_name(self) -> str:
        """'cpu' or the Vulkan device's name."""
        return self._core.device_name

    def close(self) -> None:
        """Releases the session; its memory is freed once no output view of it is left."""
        self._core.close()

    @property
    def _last_input_addresses(self) -> Tuple[int, ...]:
        """Debug: the addresses the last run passed to kiln_session_set_input, by input index."""
        return self._core._last_input_addresses

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.device_name
        return "<kiln.Session %s inputs=%s outputs=%s>" % (
            state, [i.name for i in self.inputs], [o.name for o in self.outputs])


class Model(_Closable):
    """A loaded, verified bundle (Model.load). Immutable: any number of threads
    may use it and make sessions of it."""

    __slots__ = ("_core", "inputs", "outputs", "composites")

    def __init__(self, core: Any) -> None:
        self._core = core
        #: The model's inputs and outputs, in order.
        self.inputs: Tuple[TensorInfo, ...] = _infos(core.inputs)
        self.outputs: Tuple[TensorInfo, ...] = _infos(core.outputs)
        #: Its sequence and optional inputs and outputs (empty for most models).
        self.composites: Tuple[Composite, ...] = tuple(Composite(*c) for c in core.composites)

    @classmethod
    def load(cls, source: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview], *,
             verify_only: bool = False, trusted_keys: Optional[Sequence[Union[bytes, str]]] = None) -> "Model":
        """Loads a bundle from a path (str or os.PathLike; mapped read-only) or
        from its bytes (copied once). ``verify_only`` checks the bundle but
        maps no kernels (it can be inspected, not run: for another CPU).
        ``trusted_keys``: Ed25519 public keys (32 bytes, or 64 hex digits as
        ``kilnc --print-public-key`` prints them); with any, the bundle must
        be signed by one of them (docs/bundle.md, Signatures).
        A bad bundle raises kiln.Error (e.g. code INVALID_BUNDLE)."""
        if isinstance(source, (str, os.PathLike)):
            source = os.fsdecode(os.fspath(source))
        elif not isinstance(source, (bytes, bytearray, memoryview)):
            raise TypeError("Model.load takes a path or bytes, not %s" % type(source).__name__)
        keys = b""
        for key in trusted_keys or ():
            raw = bytes.fromhex(key) if isinstance(key, str) else bytes(key)
            if len(raw) != 32:
                raise ValueError("a trusted key is 32 bytes (64 hex digits), not %d bytes" % len(raw))
            keys += raw
        return cls(_kiln.Model(source, verify_only, keys))

    @property
    def device(self) -> str:
        """'cpu' or 'vulkan': what the bundle was compiled for."""
        return self._core.device

    def session(self, threads: int = 1, device: str = "auto") -> Session:
        """A new session. ``threads``: how many threads run each dispatch, the
        calling one included. ``device``: 'auto' (the bundle's), 'cpu' or
        'vulkan'; another than the bundle's is kiln.Error INVALID_ARGUMENT."""
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError("threads must be an int >= 1, not %r" % (threads,))
        return Session(self._core.session(threads, device), self.inputs, self.outputs,
                       (_narrow(self._core.inputs), _narrow(self._core.outputs)))

    def close(self) -> None:
        """Releases the model; it is freed once its sessions are."""
        self._core.close()

    def __repr__(self) -> str:
        return "<kiln.Model%s inputs=%s outputs=%s>" % (
            " closed" if self.closed else "", [tuple(i[:3]) for i in self.inputs],
            [tuple(o[:3]) for o in self.outputs])


def _stats() -> Dict[str, int]:
    """Debug counters of the process: ``inputs_direct`` (inputs whose memory went
    straight to the runtime) and ``input_copies`` (inputs numpy converted first)."""
    return _kiln.stats()
