"""kiln's exceptions. The extension (kiln._kiln) imports this module at load,
so it imports nothing of kiln itself."""

from __future__ import annotations


class Error(Exception):
    """An error of the runtime (libkiln) or of the binding.

    ``code`` is the name of the runtime's status code: ``"INVALID_ARGUMENT"``,
    ``"INVALID_BUNDLE"``, ``"UNSUPPORTED"``, ``"NOT_FOUND"``,
    ``"OUT_OF_MEMORY"``, ``"IO_ERROR"`` or ``"INTERNAL"``; ``message`` (also
    ``str(e)``) is the runtime's message.
    """

    def __init__(self, message: str, code: str = "INTERNAL") -> None:
        super().__init__(message, code)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message


class CompileError(Error):
    """kilnc refused the model or the options (``code == "INVALID_ARGUMENT"``,
    the message is kilnc's, e.g. naming an unsupported operator and its node),
    or failed itself (``"INTERNAL"``: a bug in kilnc; ``"OUT_OF_MEMORY"``)."""


class CompileWarning(UserWarning):
    """What kilnc warns about and compiles anyway (Python's ``warnings``, one
    per message, as kilnc prints ``kilnc: warning: ...``): ONNX's checker or
    shape inference refusing a model kilnc reads itself, a declared shape
    kilnc replaced (naming the value)."""
