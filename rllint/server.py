"""`rllint server`: a language server (LSP over stdio) on pygls, from the optional `lsp` extra.

Diagnostics are published when a document is opened, changed and saved, each with its rule's
code linking to the rule's page and the version of the document they were found in. Code actions
apply a finding's fix (unsafe ones say so) and suppress a finding with `# noqa: CODE` on its line.
Each file is linted with the settings of the closest rllint config above it, read again after any
save (a config may have changed).

Edits come faster than lints (a lint takes tens of milliseconds to seconds, a keystroke is an
edit), so a change is linted once the edits of its document pause for `DEBOUNCE_SECONDS`, and
only its latest version: a burst of edits costs one lint. Lints run one at a time on a thread of
their own, so that the server keeps reading messages meanwhile; a result for a version that has
been edited since is dropped, since the next lint is already due.

The process stays warm: rules, fix builders, libcst and its native parser are loaded once, at
start, so a document's diagnostics cost its lint alone.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional
from urllib.parse import unquote

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from rllint import __version__
from rllint.config import ConfigError, ConfigTree, load_settings
from rllint.diagnostic import Diagnostic, Severity
from rllint.files import file_kind
from rllint.fix import load_builders
from rllint.fix.apply import add_noqa
from rllint.pages import rule_page_url
from rllint.registry import load_rules
from rllint.runner import lint_text
from rllint.settings import Settings
from rllint.source import split_lines

# Seconds a document's edits must pause before it is linted.
DEBOUNCE_SECONDS = 0.3

_SEVERITIES = {Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning,
               Severity.INFO: types.DiagnosticSeverity.Information}


class RllintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("rllint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self._configs: Optional[ConfigTree] = None
        self.findings: Dict[str, List[Diagnostic]] = {}  # uri -> rllint's findings of its last lint
        self.docs_urls: Dict[str, Optional[str]] = {}  # uri -> `docs-url` of its settings, for rule links
        self._due: Dict[str, asyncio.TimerHandle] = {}  # uri -> its lint, waiting for the edits to pause
        self._linter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rllint-lint")  # one lint at a time

    def configs(self) -> ConfigTree:
        if self._configs is None:
            root = self.workspace.root_path if self.workspace and self.workspace.root_path else None
            self._configs = ConfigTree(load_settings(start=root))
        return self._configs

    def forget_configs(self) -> None:
        self._configs = None

    def schedule(self, uri: str, delay: float = DEBOUNCE_SECONDS) -> None:
        """Lint the document `delay` seconds from now, unless it is edited again before: then from that edit."""
        self.cancel(uri)
        self._due[uri] = asyncio.get_running_loop().call_later(
            delay, lambda: asyncio.ensure_future(self.lint(uri)))

    def _open(self, uri: str) -> Optional[TextDocument]:
        """The document at `uri` while the editor has it open (`get_text_document` would read a closed one)."""
        return self.workspace.text_documents.get(unquote(uri))

    def cancel(self, uri: str) -> None:
        due = self._due.pop(uri, None)
        if due is not None:
            due.cancel()

    async def lint(self, uri: str) -> None:
        """Lint the document as it stands in the editor and publish its diagnostics, with its version,
        unless it was edited or closed meanwhile."""
        self._due.pop(uri, None)
        document = self._open(uri)
        if document is None:
            return
        version, source = document.version, document.source
        path = uris.to_fs_path(uri) or uri
        try:
            settings = self.configs().for_path(path)
            result = await asyncio.get_running_loop().run_in_executor(self._linter, lint_text, source, path, settings)
        except ConfigError as error:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"rllint: {error}"))
            return
        except Exception as error:  # a bug in rllint: said, as the command line says it, and the server goes on
            self.window_show_message(types.ShowMessageParams(
                types.MessageType.Error, f"rllint: internal error: {type(error).__name__}: {error} (a bug in "
                                         "rllint: please report it with the file that caused it)"))
            return
        document = self._open(uri)
        if document is None or document.version != version:
            return
        for note in result.notes:
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning, f"rllint: {note}"))
        found = [d for d in result.diagnostics if d.path == path]
        self.findings[uri], self.docs_urls[uri] = found, settings.docs_url
        diagnostics = [_lsp_diagnostic(d, document, settings.docs_url) for d in found]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics,
                                                                              version=version))


def _range(document: TextDocument, line: int, column: int, end_line: int, end_column: int) -> types.Range:
    """rllint's 1-based lines and code-point columns as an LSP range in the client's units. Lines are
    counted as Python and LSP count them (`split_lines`), not as pygls's `document.lines` does
    (`str.splitlines`, which also breaks at a form feed or U+2028)."""
    server_range = types.Range(start=types.Position(line=line - 1, character=column - 1),
                               end=types.Position(line=end_line - 1, character=end_column - 1))
    return document.position_codec.range_to_client_units(split_lines(document.source), server_range)


def _lsp_diagnostic(d: Diagnostic, document: TextDocument, docs_url: Optional[str]) -> types.Diagnostic:
    page = rule_page_url(d.code, docs_url)
    return types.Diagnostic(
        range=_range(document, d.line, d.column, d.end_line, d.end_column),
        message=d.message, severity=_SEVERITIES[Severity(d.severity)], code=d.code, source="rllint",
        code_description=None if page is None else types.CodeDescription(href=page), data={"name": d.name})


def _actions(server: RllintServer, params: types.CodeActionParams) -> List[types.CodeAction]:
    uri = params.text_document.uri
    document = server.workspace.get_text_document(uri)
    requested = params.range
    actions = []
    for finding in server.findings.get(uri, []):
        diagnostic = _lsp_diagnostic(finding, document, server.docs_urls.get(uri))
        if not requested.start.line <= diagnostic.range.start.line <= requested.end.line:
            continue
        if finding.fix is not None:
            edits = [types.TextEdit(_range(document, e.line, e.column, e.end_line, e.end_column), e.content)
                     for e in finding.fix.edits]
            unsafe = "" if finding.fix.safe else " (unsafe)"
            actions.append(types.CodeAction(
                title=f"Fix {finding.code}: {finding.fix.message}{unsafe}", kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic], is_preferred=finding.fix.safe,
                edit=types.WorkspaceEdit(changes={uri: edits})))
        noqa_text, changed = add_noqa(document.source, [finding], python=file_kind(document.path) not in ("yaml", "shell"))
        if changed:
            body = split_lines(noqa_text)[finding.line - 1].rstrip("\r\n")
            old_end = len(split_lines(document.source)[finding.line - 1].rstrip("\r\n")) + 1
            actions.append(types.CodeAction(
                title=f"Suppress {finding.code} on this line (# noqa: {finding.code})",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                edit=types.WorkspaceEdit(changes={uri: [
                    types.TextEdit(_range(document, finding.line, 1, finding.line, old_end), body)]})))
    return actions


def build() -> RllintServer:
    load_rules()
    load_builders()
    server = RllintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: RllintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, delay=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: RllintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: RllintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.forget_configs()
        ls.schedule(params.text_document.uri, delay=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: RllintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.findings.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: RllintServer, params: types.CodeActionParams) -> List[types.CodeAction]:
        return _actions(ls, params)

    return server


def serve() -> None:
    """Warm up (the first lint imports and compiles what every later one reuses), then serve on stdio."""
    server = build()
    lint_text("import torch\nx = torch.log(torch.softmax(x, -1))\n", "warm-up.py", Settings())
    server.start_io()
