"""Build the fact engine of a small source, for the engine's tests and the rules' own."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.flow import Flow
from rllint.runner import FileContext
from rllint.settings import Settings


class Engine:
    """The flow of `source` (dedented), with helpers that find expressions by their code."""

    def __init__(self, source: str, path: str = "example.py") -> None:
        self.text = textwrap.dedent(source)
        self.module = cst.parse_module(self.text)
        self.file = FileContext(path, self.text, self.module, ast.parse(self.text), Settings())
        self.flow: Flow = self.file.fact(Flow)
        self.flow.analyze_all()

    def code(self, node) -> str:
        return " ".join(self.module.code_for_node(node).split())

    def nodes(self, code: str):
        """Every expression whose code is `code`, in the order the engine met them."""
        return [node for node in self.flow.values if self.code(node) == code]

    def value(self, code: str, occurrence: int = -1):
        """The value of an expression written `code` (the last occurrence by default)."""
        found = self.nodes(code)
        assert found, f"no expression {code!r} was interpreted"
        return self.flow.value(found[occurrence])

    def facts(self, code: str, *names: str, occurrence: int = -1) -> dict:
        found = self.value(code, occurrence)
        return {name: found.facts.get(name) for name in names}
