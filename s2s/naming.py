"""Every identifier s2s generates comes from here, unique within its scope.

Conventions: ``x_adj`` is the adjoint of ``x``, ``x_dot`` its tangent,
``x_tape`` the tape that records it, ``_t1`` a temporary. Names are never
formatted by the passes themselves:

    >>> namer = Namer({"x", "x_adj"})
    >>> namer.adjoint("x"), namer.adjoint("x"), namer.temp()
    ('x_adj2', 'x_adj2', '_t1')
"""

from __future__ import annotations

__all__ = ["Namer", "RESERVED", "is_temp"]

#: Names that generated modules import or define at module level.
RESERVED = frozenset({"np", "math", "rt", "numba", "operator"})


def is_temp(name: str) -> bool:
    """Whether ``name`` is a temporary :meth:`Namer.temp` made for an expression (``_t1``).

        >>> is_temp("_t12"), is_temp("t1"), is_temp("_tape")
        (True, False, False)
    """
    return name.startswith("_t") and name[2:].isdigit()


class Namer:
    """Makes fresh names that avoid ``taken`` and each other."""

    def __init__(self, taken=()):
        self.taken = set(taken) | RESERVED
        self._derived: dict[tuple[str, str], str] = {}
        self._counters: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        """``base`` itself if free, else ``base2``, ``base3``, ..."""
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}{k}"
        self.taken.add(name)
        return name

    def temp(self, hint: str = "_t") -> str:
        """A new temporary ``_t1``, ``_t2``, ... (or ``hint`` followed by a number)."""
        while True:
            k = self._counters.get(hint, 0) + 1
            self._counters[hint] = k
            name = f"{hint}{k}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def derived(self, name: str, suffix: str) -> str:
        """The one name ``{name}_{suffix}`` for ``name`` (the same on every call)."""
        key = (name, suffix)
        if key not in self._derived:
            self._derived[key] = self.fresh(f"{name}_{suffix}")
        return self._derived[key]

    def derived_names(self, suffix: str) -> dict[str, str]:
        """Every ``{name}_{suffix}`` made so far, by ``name``."""
        return {base: derived for (base, kind), derived in self._derived.items() if kind == suffix}

    def adjoint(self, name: str) -> str:
        """The adjoint of ``name``."""
        return self.derived(name, "adj")

    def tangent(self, name: str) -> str:
        """The tangent of ``name``."""
        return self.derived(name, "dot")

    def tape(self, name: str) -> str:
        """The tape recording ``name``."""
        return self.derived(name, "tape")
