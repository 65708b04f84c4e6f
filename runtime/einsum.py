"""``np.einsum`` of one or two operands as loops, and the adjoint of each operand.

Numba has no ``np.einsum``. Each subscript string (a literal in generated
code) becomes a loop nest written out as source, once per string: the
output's letters outermost, the summed letters inside, one multiply-add in
the body. The adjoint of an operand is the same kind of loop nest, with the
result's adjoint as a factor and the operand's subscripts as the output,
so a repeated letter (``ii->i``) writes the diagonal only. Axes of one
letter must have one length, as NumPy requires:

    >>> import numpy as np
    >>> print(loop_source(["ij", "jk"], "ik", ["a", "b"], "out_shape"))
    def _einsum(a, b, out_shape, dt):
        n_i = a.shape[0]
        n_j = a.shape[1]
        if b.shape[0] != n_j:
            raise ValueError('einsum: the axes of letter j differ in length')
        n_k = b.shape[1]
        out = np.zeros(out_shape, dt)
        for k_i in range(n_i):
            for k_k in range(n_k):
                for k_j in range(n_j):
                    out[k_i, k_k] += a[k_i, k_j] * b[k_j, k_k]
        return out
    >>> einsum_vjp_a("ij,jk->ik", np.ones((2, 2)), np.zeros((2, 3)), np.arange(6.0).reshape(3, 2)).tolist()
    [[1.0, 5.0, 9.0], [1.0, 5.0, 9.0]]

Subscripts with an ellipsis, more than two operands, a letter in the output
that no operand has, or operands without the letters' rank raise ValueError
(:func:`parse`); the compiler checks them before generating code.
"""

from __future__ import annotations

import functools

import numpy as np
from numba.core import errors, types
from numba.core.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype

__all__ = ["parse", "einsum", "einsum_vjp_a", "einsum_vjp_b", "loop_source"]


def parse(subscripts: str, operands: int | None = None) -> tuple[list[str], str]:
    """The operands' subscripts and the output's, with NumPy's implicit output when there is no ``->``.

    >>> parse("ij,jk")
    (['ij', 'jk'], 'ik')
    """
    text = subscripts.replace(" ", "")
    if "." in text:
        raise ValueError("an ellipsis (`...`) in einsum subscripts is not supported; name every axis")
    inputs, arrow, output = text.partition("->")
    parts = inputs.split(",")
    if not 1 <= len(parts) <= 2:
        raise ValueError(f"einsum of {len(parts)} operands is not supported (one or two; nest the calls)")
    if operands is not None and operands != len(parts):
        raise ValueError(f"the subscripts {subscripts!r} name {len(parts)} operands, but {operands} are given")
    letters = "".join(parts)
    if not all(c.isalpha() for c in letters + output):
        raise ValueError(f"einsum subscripts {subscripts!r}: only letters, `,` and `->` are supported")
    if not arrow:
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(output)) != len(output) or any(c not in letters for c in output):
        raise ValueError(f"einsum subscripts {subscripts!r}: each output letter must appear once and in an operand")
    return parts, output


def loop_source(terms: list[str], target: str, names: list[str], shape: str, sizes: list | None = None) -> str:
    """Source of ``out[target] += product of terms`` over every letter (``names`` the terms' arrays).

    ``sizes`` lists ``(array, subscripts)`` giving each letter's extent (the
    terms by default); ``shape`` is the name of the output's shape argument.
    An empty ``target`` accumulates a scalar.
    """
    sizes = sizes if sizes is not None else list(zip(names, terms))
    lines, known = [], {}
    for array, subs in sizes:
        for d, c in enumerate(subs):
            if c not in known:
                known[c] = f"{array}.shape[{d}]"
                lines.append(f"    n_{c} = {array}.shape[{d}]")
            else:  # NumPy's ValueError: the loops would read past the shorter axis
                lines.append(f"    if {array}.shape[{d}] != n_{c}:\n"
                             f"        raise ValueError('einsum: the axes of letter {c} differ in length')")
    params = list(dict.fromkeys(names + [a for a, _ in sizes]))
    lines.insert(0, f"def _einsum({', '.join(params)}, {shape}, dt):")
    order = list(dict.fromkeys(target + "".join(terms)))
    lines.append(f"    out = np.zeros({shape}, dt)" if target else "    out = 0.0")
    indent = "    "
    for c in order:  # letter c's index is k_c (a letter may also be the name of an array: `bij,bjk->bik`)
        lines.append(f"{indent}for k_{c} in range(n_{c}):")
        indent += "    "
    product = " * ".join(f"{n}[{', '.join('k_' + c for c in s)}]" if s else n for n, s in zip(names, terms))
    at = "[" + ", ".join("k_" + c for c in target) + "]" if target else ""
    lines.append(f"{indent}out{at} += {product}")
    lines.append("    return out")
    return "\n".join(lines)


@functools.cache
def _kernel(terms: tuple, target: str, names: tuple, sizes: tuple):
    namespace = {"np": np}
    exec(loop_source(list(terms), target, list(names), "out_shape", list(sizes)), namespace)  # noqa: S102
    return namespace["_einsum"]


@functools.cache
def _compiled(terms: tuple, target: str, names: tuple, sizes: tuple):
    return register_jitable(_kernel(terms, target, names, sizes))


def _plan(subscripts: str, which: str, two: bool):
    """Terms, target, term names and size sources of the loop nest for the result (``which="z"``) or an adjoint."""
    parts, output = parse(subscripts, 2 if two else 1)
    sizes = (("a", parts[0]), ("b", parts[1])) if two else (("a", parts[0]),)
    if which == "z":
        return tuple(parts), output, ("a", "b")[:len(parts)], sizes
    if which == "a":
        return (output,) + tuple(parts[1:]), parts[0], ("g", "b")[:len(parts)], sizes
    return (output, parts[0]), parts[1], ("g", "a"), sizes


def _literal(subscripts, name):
    if not isinstance(subscripts, types.StringLiteral):
        raise errors.TypingError(f"rt.{name}: the subscripts must be a string literal, got {subscripts}")
    return subscripts.literal_value


def _dtype(*arrays):
    return np.result_type(np.float64, *[as_dtype(a.dtype) for a in arrays if isinstance(a, types.Array)])


def _shape_of(target: str, sizes: tuple):
    """Source of the output shape, a tuple of the target letters' extents."""
    where = {}
    for array, subs in sizes:
        for d, c in enumerate(subs):
            where.setdefault(c, f"{array}.shape[{d}]")
    return "(" + "".join(f"{where[c]}, " for c in target) + ")"


def _call(subscripts: str, which: str, a, b, g=None):
    """Plain-Python run of a loop nest (``target="python"``)."""
    terms, target, names, sizes = _plan(subscripts, which, b is not None)
    values = {"a": np.asarray(a), "b": None if b is None else np.asarray(b), "g": g}
    shape = eval(_shape_of(target, sizes), {}, values)  # noqa: S307
    params = list(dict.fromkeys(list(names) + [n for n, _ in sizes]))
    return _kernel(terms, target, names, sizes)(*[values[p] for p in params], shape, np.float64)


def einsum(subscripts, a, b=None):
    """``np.einsum(subscripts, a[, b])`` for compiled code (one or two operands, named axes only).

    >>> float(einsum("ii->", np.eye(3)))
    3.0
    """
    parse(subscripts, 1 if b is None else 2)
    return np.einsum(subscripts, a) if b is None else np.einsum(subscripts, a, b)


def einsum_vjp_a(subscripts, g, a, b=None):
    """Adjoint of the first operand of ``einsum(subscripts, a[, b])`` given the adjoint ``g`` of its result."""
    return _call(subscripts, "a", a, b, g)


def einsum_vjp_b(subscripts, g, a, b):
    """Adjoint of the second operand of ``einsum(subscripts, a, b)`` given the adjoint ``g`` of its result."""
    return _call(subscripts, "b", a, b, g)


def _nb(which: str, name: str, subscripts, a, b, g=None):
    text = _literal(subscripts, name)
    two = not (b is None or isinstance(b, types.NoneType) or isinstance(b, types.Omitted))
    try:
        terms, target, names, sizes = _plan(text, which, two)
    except ValueError as exc:
        raise errors.TypingError(f"rt.{name}: {exc}") from None
    for array, subs in (("a", _plan(text, "z", two)[0][0]),) + ((("b", _plan(text, "z", two)[0][1]),) if two else ()):
        ty = a if array == "a" else b
        if not isinstance(ty, types.Array) or ty.ndim != len(subs):
            raise errors.TypingError(f"rt.{name}: operand {array} must be an array of {len(subs)} axes for "
                                     f"{text!r}, got {ty}")
    kernel = _compiled(terms, target, names, sizes)
    dt = _dtype(a, b, g)
    shape_src = _shape_of(target, sizes)
    params = list(dict.fromkeys(list(names) + [n for n, _ in sizes]))
    namespace = {"kernel": kernel, "dt": dt}
    exec(f"def run(subscripts, g, a, b):\n    return kernel({', '.join(params)}, {shape_src}, dt)",  # noqa: S102
         namespace)
    return register_jitable(namespace["run"])


@overload(einsum, prefer_literal=True)
def _einsum_nb(subscripts, a, b=None):
    run = _nb("z", "einsum", subscripts, a, b)
    return lambda subscripts, a, b=None: run(subscripts, None, a, b)


@overload(einsum_vjp_a, prefer_literal=True)
def _einsum_vjp_a_nb(subscripts, g, a, b=None):
    run = _nb("a", "einsum_vjp_a", subscripts, a, b, g)
    return lambda subscripts, g, a, b=None: run(subscripts, g, a, b)


@overload(einsum_vjp_b, prefer_literal=True)
def _einsum_vjp_b_nb(subscripts, g, a, b):
    run = _nb("b", "einsum_vjp_b", subscripts, a, b, g)
    return lambda subscripts, g, a, b: run(subscripts, g, a, b)
