"""Build the fact engine of a small source, for the engine's tests and the rules' own."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.flow import Flow
from rllint.runner import FileContext
from rllint.settings import Settings


class Engine:
    """The flow of `source` (dedented), with helpers that find expressions by their code."""

    def __init__(self, source: str, path: str = "example.py", root=None) -> None:
        self.text = textwrap.dedent(source)
        self.module = cst.parse_module(self.text)
        settings = Settings(root=root) if root is not None else Settings()
        self.file = FileContext(path, self.text, self.module, ast.parse(self.text), settings)
        self.flow: Flow = self.file.fact(Flow)
        self.flow.analyze_all()

    @classmethod
    def project(cls, root, files: dict, main: str) -> "Engine":
        """The engine of the file `main` of a project at `root` made of `files` (name -> source, written there),
        so that it follows values into the other modules and finds callers in the ones that import it."""
        (root / "pyproject.toml").write_text("")
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(textwrap.dedent(text))
        return cls((root / main).read_text(), str(root / main), root)

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
