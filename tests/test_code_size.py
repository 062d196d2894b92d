"""Small functions and modules: no function in ``flapjax/`` over
:data:`FUNCTION_LIMIT` lines of code (from its first statement after the
docstring to its last line, blank and comment lines included) and no module
over :data:`MODULE_LIMIT` lines.

Modules and functions that were over the limits when this test was written
(outside ``flapjax/identify/``, which has none) are listed in
:data:`OVERSIZE_TODAY` with their size then: they may shrink, not grow, and an
entry that falls under the limit must leave the list. ``python
tests/test_code_size.py`` prints what is over the limits now, in the list's form.
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FUNCTION_LIMIT = 60
MODULE_LIMIT = 400

#: "path" (module lines) or "path::Qualified.name" (function code lines) -> size today.
OVERSIZE_TODAY = {
}


def _body_start(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Line of a function's first statement after its docstring."""
    body = fn.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return body[0].lineno if body else fn.end_lineno


def function_lengths(source: str) -> dict[str, int]:
    """Qualified name -> lines of code of every function and method in
    ``source`` (nested ones too), the docstring left out."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                out[name] = child.end_lineno - _body_start(child) + 1
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def oversize(root: pathlib.Path = ROOT) -> dict[str, int]:
    """Every module over :data:`MODULE_LIMIT` lines and function over
    :data:`FUNCTION_LIMIT` lines of code under ``root/flapjax``, in the form
    of :data:`OVERSIZE_TODAY`."""
    found: dict[str, int] = {}
    for path in sorted((root / "flapjax").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > MODULE_LIMIT:
            found[rel] = lines
        for name, length in function_lengths(source).items():
            if length > FUNCTION_LIMIT:
                found[f"{rel}::{name}"] = length
    return found


def test_function_length_leaves_out_the_docstring_and_enters_classes():
    source = '''
def short(x):
    """One line.

    More docstring.
    """
    y = x + 1
    return y


class Box:
    def method(self):
        y = 1
        # a comment counts

        return y

    def outer(self):
        def inner():
            return 2
        return inner
'''
    assert function_lengths(source) == {"short": 2, "Box.method": 4, "Box.outer": 3, "Box.outer.inner": 1}


def test_oversize_finds_a_long_function_and_a_long_module(tmp_path):
    pkg = tmp_path / "flapjax"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_LIMIT + 1))
    (pkg / "long.py").write_text(f'def f():\n    """Doc."""\n{body}')
    (pkg / "ok.py").write_text('def g():\n    """Doc."""\n' + "    x = 1\n" * FUNCTION_LIMIT)
    (pkg / "big.py").write_text("x = 1\n" * (MODULE_LIMIT + 1))
    assert oversize(tmp_path) == {"flapjax/long.py::f": FUNCTION_LIMIT + 1, "flapjax/big.py": MODULE_LIMIT + 1}


def test_no_function_or_module_is_over_the_limits_unless_listed_and_none_grows():
    found = oversize()
    new = {k: v for k, v in found.items() if k not in OVERSIZE_TODAY}
    grown = {k: (OVERSIZE_TODAY[k], v) for k, v in found.items() if k in OVERSIZE_TODAY and v > OVERSIZE_TODAY[k]}
    fixed = sorted(k for k in OVERSIZE_TODAY if k not in found)
    assert not new, f"over the limits ({FUNCTION_LIMIT} lines a function, {MODULE_LIMIT} a module): {new}"
    assert not grown, f"listed in OVERSIZE_TODAY and grown since (then, now): {grown}"
    assert not fixed, f"now within the limits: remove them from OVERSIZE_TODAY: {fixed}"


def test_identify_has_no_allowance():
    assert not [k for k in OVERSIZE_TODAY if k.startswith("flapjax/identify/")]


if __name__ == "__main__":
    for key, size in oversize().items():
        print(f'    "{key}": {size},')
    sys.exit(0)
