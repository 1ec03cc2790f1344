import ast

from rllint.analysis.nodes import AstNodes


class _File:
    def __init__(self, text):
        self.tree = ast.parse(text)


def test_nodes_by_exact_type_and_in_source_order():
    nodes = AstNodes(_File("def f():\n    from b import c\nimport a\nclass K:\n    import d\n"))
    assert [n.name for n in nodes.of(ast.ClassDef)] == ["K"]
    assert nodes.of(ast.AsyncFunctionDef) == []
    ordered = nodes.in_source_order(ast.Import, ast.ImportFrom)
    assert [(n.lineno, type(n).__name__) for n in ordered] == [(2, "ImportFrom"), (3, "Import"), (5, "Import")]
