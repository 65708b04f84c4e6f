"""Small builders and queries over gast trees, shared by the passes.

    >>> import gast
    >>> to_source(assign("y", call("np.sin", name("x"))))
    'y = np.sin(x)'
"""

from __future__ import annotations

import ast
import copy

import astor
import gast

__all__ = [
    "name", "const", "dotted", "call", "assign", "expr_stmt", "attr_chain", "to_source", "ast_source", "stmt",
    "names_read", "names_written", "located", "is_atom", "subst", "walk_stmts",
]


def name(ident: str, store: bool = False) -> gast.Name:
    """``ident`` as a Name node (``store=True`` for an assignment target)."""
    return gast.Name(id=ident, ctx=gast.Store() if store else gast.Load(), annotation=None,
                     type_comment=None)


def const(value) -> gast.Constant:
    """A literal."""
    return gast.Constant(value=value, kind=None)


def dotted(path: str) -> gast.expr:
    """``np.linalg.norm`` as nested Attribute nodes."""
    parts = path.split(".")
    node: gast.expr = name(parts[0])
    for part in parts[1:]:
        node = gast.Attribute(value=node, attr=part, ctx=gast.Load())
    return node


def attr_chain(node) -> str | None:
    """``'np.linalg.norm'`` for such a chain of Attribute and Name nodes (``gast`` or ``ast``), else None.

        >>> attr_chain(ast.parse("np.linalg.norm").body[0].value), attr_chain(ast.parse("x[0].T").body[0].value)
        ('np.linalg.norm', None)
    """
    parts = []
    while isinstance(node, (gast.Attribute, ast.Attribute)):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, (gast.Name, ast.Name)):
        return ".".join([node.id, *reversed(parts)])
    return None


def call(func: str | gast.expr, *args, keywords: dict | None = None) -> gast.Call:
    """A call of ``func`` (a dotted path or a node) on nodes ``args``."""
    func = dotted(func) if isinstance(func, str) else func
    kws = [gast.keyword(arg=k, value=v) for k, v in (keywords or {}).items()]
    return gast.Call(func=func, args=list(args), keywords=kws)


def assign(target: str | gast.expr, value: gast.expr) -> gast.Assign:
    """``target = value``; a string target is a variable name."""
    if isinstance(target, str):
        target = name(target, store=True)
    return gast.Assign(targets=[target], value=value, type_comment=None)


def expr_stmt(value: gast.expr) -> gast.Expr:
    """A statement that evaluates ``value``."""
    return gast.Expr(value=value)


def stmt(text: str) -> gast.stmt:
    """One statement parsed from ``text``."""
    return gast.parse(text).body[0]


class _SignedConstants(ast.NodeTransformer):
    """A negative number becomes ``-number``, which astor parenthesises where precedence needs it."""

    def visit_Constant(self, node):
        value = node.value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (value < 0 or str(value)[0] == "-"):
            return ast.copy_location(ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-value)), node)
        return node


def to_source(node) -> str:
    """Python source of a gast node, without a trailing newline.

    >>> to_source(gast.BinOp(left=const(-0.5), op=gast.Pow(), right=const(2)))
    '((-0.5) ** 2)'
    """
    return ast_source(gast.gast_to_ast(node)).rstrip("\n")


def ast_source(tree: ast.AST) -> str:
    """Python source of a standard ``ast`` tree (negative numbers parenthesised where needed)."""
    return astor.to_source(_SignedConstants().visit(tree))


def located(new, old):
    """``new`` with the line of ``old`` (for error messages); returns ``new``."""
    if old is not None and getattr(old, "lineno", None) is not None:
        for node in gast.walk(new):
            if getattr(node, "lineno", None) is None:
                node.lineno = old.lineno
                node.col_offset = getattr(old, "col_offset", 0)
    return new


def is_atom(node) -> bool:
    """A Name or a literal: what operands are after normalisation."""
    return isinstance(node, (gast.Name, gast.Constant))


def names_read(node) -> set[str]:
    """Names loaded anywhere in ``node``."""
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def names_written(node) -> set[str]:
    """Names stored anywhere in ``node`` (assignment targets, loop variables)."""
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def subst(node, mapping: dict) -> gast.AST:
    """A copy of ``node`` with each loaded Name in ``mapping`` replaced by a copy of its node."""
    node = copy.deepcopy(node)

    class _Replace(gast.NodeTransformer):
        def visit_Name(self, n):
            if isinstance(n.ctx, gast.Load) and n.id in mapping:
                return copy.deepcopy(mapping[n.id])
            return n

    return _Replace().visit(node)


def walk_stmts(body):
    """Every statement of ``body``, nested ones included, in source order."""
    for s in body:
        yield s
        for field in ("body", "orelse"):
            yield from walk_stmts(getattr(s, field, []) or [])
