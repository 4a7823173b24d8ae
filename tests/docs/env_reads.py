"""The environment variables Quiver's own code reads, found by parsing it.

A read is a call of a ``config.env`` reader (``env_str``, ``env_int``...), an
``os.environ`` / ``os.getenv`` lookup, or a lookup in a ``Mapping[str, str]``
parameter that stands for the environment (``config.devstack.run_options``). A
name may be a string constant or a loop variable over a module-level tuple of them
(``config.threads.ONE_THREAD``)."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Not Quiver's own runtime code: the venv, state, tests, benchmarks, built files.
SKIP = {".venv", ".quiver", ".git", "tests", "bench", "node_modules", "site"}
READERS = {
    "env_str",
    "env_secret",
    "env_bool",
    "env_int",
    "env_list",
    "env_url",
    "env_networks",
}
ENVIRON = {"os.environ.get", "os.environ.setdefault", "os.environ.pop", "os.getenv"}
MAPPING = "Mapping[str, str]"


def project_files(root: Path = ROOT) -> Iterator[Path]:
    """Every Python file of the project that runs in Quiver or its client."""
    for folder, dirs, files in os.walk(root):
        skip = SKIP - {root.name}
        dirs[:] = [d for d in dirs if d not in skip and not d.startswith(".")]
        for name in files:
            if name.endswith(".py"):
                yield Path(folder) / name


def env_reads(source: str) -> set[str]:
    """The variable names one module's code reads."""
    tree = ast.parse(source)
    reads = _Reads(_string_tuples(tree))
    reads.visit(tree)
    return reads.names


def project_env_reads(root: Path = ROOT) -> dict[str, set[str]]:
    """Variable name -> the files (relative to the root) that read it."""
    found: dict[str, set[str]] = {}
    for path in project_files(root):
        for name in env_reads(path.read_text()):
            found.setdefault(name, set()).add(str(path.relative_to(root)))
    return found


def _string_tuples(tree: ast.Module) -> dict[str, tuple[str, ...]]:
    """Module-level ``NAME = ("A", "B")`` assignments."""
    tuples: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        if not isinstance(node.value, ast.Tuple | ast.List):
            continue
        items = [
            i.value
            for i in node.value.elts
            if isinstance(i, ast.Constant) and isinstance(i.value, str)
        ]
        if items and len(items) == len(node.value.elts):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    tuples[target.id] = tuple(items)
    return tuples


class _Reads(ast.NodeVisitor):
    def __init__(self, tuples: dict[str, tuple[str, ...]]) -> None:
        self.names: set[str] = set()
        self.tuples = tuples
        self.loops: dict[str, tuple[str, ...]] = {}
        self.mappings: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer = set(self.mappings)
        for arg in [*node.args.args, *node.args.kwonlyargs]:
            if arg.annotation is not None and ast.unparse(arg.annotation) == MAPPING:
                self.mappings.add(arg.arg)
        self.generic_visit(node)
        self.mappings = outer

    def visit_For(self, node: ast.For) -> None:
        target, over = node.target, node.iter
        if (
            isinstance(target, ast.Name)
            and isinstance(over, ast.Name)
            and over.id in self.tuples
        ):
            self.loops[target.id] = self.tuples[over.id]
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = ast.unparse(func)
        short = called.rsplit(".", 1)[-1]
        reader = short in READERS or called in ENVIRON or self._is_mapping_get(func)
        if node.args and reader:
            self._add(node.args[0])
        else:
            for before, arg in zip(node.args, node.args[1:], strict=False):
                if isinstance(before, ast.Name) and before.id in self.mappings:
                    self._add(arg)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if ast.unparse(node.value) == "os.environ":
            self._add(node.slice)
        self.generic_visit(node)

    def _is_mapping_get(self, func: ast.expr) -> bool:
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "get"
            and isinstance(func.value, ast.Name)
            and func.value.id in self.mappings
        )

    def _add(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.names.add(node.value)
        elif isinstance(node, ast.Name) and node.id in self.loops:
            self.names.update(self.loops[node.id])
