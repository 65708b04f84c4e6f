"""Errors s2s raises: every one names what went wrong and where.

A located error shows the user's file, line and source line:

    >>> err = UnsupportedError("a `with` statement", "model.py", 12, "    with open(p) as f:")
    >>> print(err)
    a `with` statement is not supported
      File "model.py", line 12
        with open(p) as f:
"""

from __future__ import annotations

__all__ = [
    "S2SError",
    "UnsupportedError",
    "NoRuleError",
    "InputError",
    "CompileError",
    "summarize",
]


class S2SError(Exception):
    """Base class of every error s2s raises.

    Attributes ``filename``, ``lineno`` and ``line`` locate the user's source
    when the error is about a construct in it (else they are ``None``).
    """

    def __init__(self, message: str, filename: str | None = None, lineno: int | None = None,
                 line: str | None = None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.line = line
        super().__init__(self._format())

    def _format(self) -> str:
        text = self.message
        if self.filename is not None:
            text += f'\n  File "{self.filename}", line {self.lineno}'
            if self.line:
                text += f"\n    {self.line.strip()}"
        return text


class UnsupportedError(S2SError):
    """A construct s2s does not differentiate or compile."""

    def __init__(self, construct: str, filename: str | None = None, lineno: int | None = None,
                 line: str | None = None, hint: str = ""):
        self.construct = construct
        message = f"{construct} is not supported" + (f"; {hint}" if hint else "")
        super().__init__(message, filename, lineno, line)


class NoRuleError(S2SError):
    """A function without a derivative rule reached on an active path."""


class InputError(S2SError, ValueError):
    """Bad input to a transformed function: the message names the argument."""


class CompileError(S2SError):
    """Numba could not type or compile the generated code."""


def summarize(text: str) -> str:
    """The informative lines of a Numba error message, joined on one line."""
    keep = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("File ", "During:", "raised from", "^", "- Resolution failure",
                                        "<source", "Failed in nopython mode")):
            continue
        keep.append(line.replace("\x1b[1m", "").replace("\x1b[0m", ""))
        if len(keep) == 3:
            break
    return " ".join(keep)
