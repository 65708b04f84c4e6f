"""Where s2s's own time goes: exclusive seconds per named section, for ``s2s show --timings``.

A section nested in another counts for itself only (a callee's vjp built
inside the reverse transform is not counted twice). Nothing is measured
unless a ``Clock`` is running in this thread:

    >>> clock = Clock()
    >>> with clock.running():
    ...     with section("outer"):
    ...         with section("inner"):
    ...             pass
    >>> sorted(clock.seconds)
    ['inner', 'outer']
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import Counter
from collections.abc import Iterator

__all__ = ["Clock", "section"]

_RUNNING: contextvars.ContextVar[Clock | None] = contextvars.ContextVar("clock", default=None)


class Clock:
    """Exclusive seconds per section label, in ``seconds``."""

    def __init__(self) -> None:
        self.seconds: Counter = Counter()
        self._open: list[list] = []  # [label, since] of each open section, innermost last

    @contextlib.contextmanager
    def running(self) -> Iterator[Clock]:
        """Measure the sections entered in this block (in this thread)."""
        token = _RUNNING.set(self)
        try:
            yield self
        finally:
            _RUNNING.reset(token)

    def _enter(self, label: str) -> None:
        now = time.perf_counter()
        if self._open:
            outer = self._open[-1]
            self.seconds[outer[0]] += now - outer[1]
        self._open.append([label, now])

    def _exit(self) -> None:
        label, since = self._open.pop()
        now = time.perf_counter()
        self.seconds[label] += now - since
        if self._open:
            self._open[-1][1] = now


@contextlib.contextmanager
def section(label: str) -> Iterator[None]:
    """Count the block's time (less its nested sections') for ``label`` when a clock is running."""
    clock = _RUNNING.get()
    if clock is None:
        yield
        return
    clock._enter(label)
    try:
        yield
    finally:
        clock._exit()
