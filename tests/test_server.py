"""`rllint server` in a real LSP session over stdio, driven by pygls's client as an editor would."""
import asyncio
import sys

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls import uris  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from rllint.pages import rule_page_url  # noqa: E402

SOURCE = "import torch\n\n\ndef policy_logps(logits):\n    return torch.log(torch.softmax(logits, dim=-1))\n"
FIXED = "import torch\n\n\ndef policy_logps(logits):\n    return torch.log_softmax(logits, dim=-1)\n"


class Editor:
    """A pygls client that keeps the last diagnostics published for each document."""

    def __init__(self) -> None:
        self.client = LanguageClient("rllint-tests", "1")
        self.published = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

    async def start(self, root, cwd=None) -> None:
        await self.client.start_io(sys.executable, "-m", "rllint", "server", cwd=cwd)
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=uris.from_fs_path(str(root))))
        self.client.initialized(types.InitializedParams())

    async def diagnostics(self) -> types.PublishDiagnosticsParams:
        return await asyncio.wait_for(self.published.get(), timeout=60)

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def apply(text: str, edits) -> str:
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start = sum(map(len, lines[:edit.range.start.line])) + edit.range.start.character
        end = sum(map(len, lines[:edit.range.end.line])) + edit.range.end.character
        text = text[:start] + edit.new_text + text[end:]
        lines = text.splitlines(keepends=True)
    return text


def session(root, script, cwd=None):
    (root / "rllint.toml").write_text('extend-select = ["RL108"]\n')  # off by default
    async def run():
        editor = Editor()
        await editor.start(root, cwd)
        try:
            return await script(editor)
        finally:
            await editor.stop()
    return asyncio.run(run())


@pytest.mark.slow
def test_diagnostics_on_open_change_and_save_and_a_fix_applied(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = uris.from_fs_path(str(path))

    async def script(editor: Editor):
        client = editor.client
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)))
        opened = await editor.diagnostics()
        (diagnostic,) = opened.diagnostics
        assert (diagnostic.code, diagnostic.source) == ("RL108", "rllint")
        assert diagnostic.code_description.href == rule_page_url("RL108")
        assert diagnostic.range.start == types.Position(line=4, character=11)

        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic])))
        titles = [action.title for action in actions]
        assert titles == ["Fix RL108: Use `log_softmax`", "Suppress RL108 on this line (# noqa: RL108)"]
        fixed = apply(SOURCE, actions[0].edit.changes[uri])
        assert fixed == FIXED
        suppressed = apply(SOURCE, actions[1].edit.changes[uri])
        assert suppressed.splitlines()[4].endswith("dim=-1))  # noqa: RL108")

        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
        assert not (await editor.diagnostics()).diagnostics

        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=suppressed)]))
        assert not (await editor.diagnostics()).diagnostics

        (tmp_path / "rllint.toml").write_text('select = ["RL302"]\n')  # settings come from the project's config
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=4),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=SOURCE)]))
        changed = await editor.diagnostics()
        assert [d.code for d in changed.diagnostics] == ["RL108"]  # config read once, until a save
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        saved = await editor.diagnostics()
        assert not saved.diagnostics  # after the save, the new config: RL108 is not selected

    session(tmp_path, script)


@pytest.mark.slow
def test_columns_are_utf16_units_for_the_client(tmp_path):
    source = SOURCE.replace("    return", "    return '🤖' and")  # one code point, two UTF-16 units
    path = tmp_path / "train.py"
    uri = uris.from_fs_path(str(path))

    async def script(editor: Editor):
        editor.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=source)))
        (diagnostic,) = (await editor.diagnostics()).diagnostics
        assert diagnostic.range.start == types.Position(line=4, character=source.splitlines()[4].index("torch") + 1)

    session(tmp_path, script)


def test_a_burst_of_edits_is_linted_once_at_its_latest_version(tmp_path):
    path = tmp_path / "train.py"
    uri = uris.from_fs_path(str(path))
    edits = 200

    async def script(editor: Editor):
        client = editor.client
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=FIXED)))
        opened = await editor.diagnostics()
        assert opened.version == 1 and not opened.diagnostics  # diagnostics say which version they are of
        for version in range(2, edits + 2):  # typing: each edit a version, the last one brings the finding back
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(
                    text=SOURCE if version == edits + 1 else FIXED + f"# {version}\n")]))
        published = [await editor.diagnostics()]
        while published[-1].version != edits + 1:
            published.append(await editor.diagnostics())
        # a lint per edit would publish 200 times, each version in turn; the server lints when the edits pause
        assert len(published) < 10 and all(p.version is not None for p in published)
        assert [d.code for d in published[-1].diagnostics] == ["RL108"]

    session(tmp_path, script)


def test_a_server_started_in_the_filesystem_root_lints_promptly(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "trainer.py").write_text("from knobs import Knobs\n\ndef fit(k: Knobs):\n    return k.actor_lr\n")
    knobs = "from dataclasses import dataclass\n\n\n@dataclass\nclass Knobs:\n    actor_lr: float = 1e-6\n" \
            "    kl_weight: float = 0.02\n"
    (tmp_path / "knobs.py").write_text(knobs)
    uri = uris.from_fs_path(str(tmp_path / "knobs.py"))

    async def script(editor: Editor):
        (tmp_path / "rllint.toml").write_text('select = ["RL606"]\nrl-context = "always"\n')
        editor.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=knobs)))
        # RL606 asks the project index which fields other modules read: the project is tmp_path, never `/`
        (diagnostic,) = (await editor.diagnostics()).diagnostics
        assert diagnostic.code == "RL606" and "kl_weight" in diagnostic.message

    session(tmp_path, script, cwd="/")


def test_server_without_the_extra_names_it(monkeypatch):
    from click.testing import CliRunner

    from rllint import cli

    monkeypatch.setitem(sys.modules, "pygls", None)
    monkeypatch.setitem(sys.modules, "rllint.server", None)
    result = CliRunner().invoke(cli.main, ["server"])
    assert result.exit_code == 2
    assert "pip install 'rllint[lsp]'" in result.output


def test_rule_links_come_from_docs_url_else_from_the_shipped_pages():
    from pathlib import Path
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    from pygls.workspace import TextDocument

    from rllint.diagnostic import Diagnostic, Severity
    from rllint.server import _lsp_diagnostic

    document = TextDocument("file:///x.py", "x = 1\n")
    finding = Diagnostic("/x.py", 1, 1, 1, 2, "RL108", "log-of-softmax", Severity.ERROR, "log of softmax")
    linked = _lsp_diagnostic(finding, document, "https://example.org/rllint/rules")
    assert linked.code_description.href == "https://example.org/rllint/rules/RL108.md"
    shipped = urlparse(_lsp_diagnostic(finding, document, None).code_description.href)
    assert shipped.scheme == "file" and Path(url2pathname(shipped.path)).read_text().startswith("# RL108 ")
