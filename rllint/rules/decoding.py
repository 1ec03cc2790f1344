"""RL3xx: generation and decoding (reasoning markers, decoding, chat templates, sampling settings)."""
from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from rllint.analysis.facts import COMPLETION, DEFAULT_SIDE, MODEL, SEQ2SEQ, TRUNCATION_SIDE
from rllint.analysis.facts import TEXT as TEXT_VALUE
from rllint.analysis.flow import Flow
from rllint.analysis.purpose import EVALUATION, Purpose
from rllint.files import is_test_path
from rllint.analysis.gold import GoldAnswers
from rllint.analysis.imports import Imports
from rllint.analysis.ir import FunctionIR
from rllint.analysis.rewards import RewardFunctions
from rllint.analysis.grad import GradFlow
from rllint.analysis.modes import TRAIN, Dropout, ModelModes, PolicyPasses
from rllint.analysis.roles import POLICY, ModelRoles
from rllint.analysis.syntax import dotted, keyword, positional, walk
from rllint.analysis.text import (AnswerLookups, GEN_IDS, PROMPT, PROMPTS, RE_FUNCTIONS, TEXT, MarkerChecks, Scope, Scopes,
                                  call_tail, extraction, is_answer_marker, may_extract,
                                  is_reasoning_close, literal_text, words, attr_tail, number, regex_of,
                                  REASONING_MARKER, STR_METHODS, unwrap)
from rllint.analysis.text_roles import TextRoles
from rllint.analysis.tokenizer import END_TOKENS, IdsUse, TokenizerFacts
from rllint.analysis.values import Values
from rllint.diagnostic import Severity, Tier
from rllint.index import SAMPLER_CALLS as _SAMPLER_CALLS, ProjectIndex
from rllint.registry import CSTRule



class FunctionRule(CSTRule):
    """A rule that needs to know the function it is in: `self.scope` is the innermost
    function's `Scope` (the module's at top level), `self.function` its node."""

    def __init__(self, file) -> None:
        super().__init__(file)
        self._functions: List[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._functions.pop()

    @property
    def function(self) -> Optional[cst.FunctionDef]:
        return self._functions[-1] if self._functions else None

    @property
    def scope(self) -> Scope:
        return self.file.fact(Scopes).of(self.function or self.file.module)

    def source(self, node: cst.CSTNode, limit: int = 60) -> str:
        text = " ".join(self.file.module.code_for_node(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."


_DISPLAY_WORDS = {"log", "logged", "preview", "snippet", "display", "excerpt", "short", "shown", "head", "peek"}
_RECORD_CALLS = {"append", "insert", "dump", "dumps", "write", "writerow"}  # calls that keep a record
_DISPLAY_CALLS = {"print", "pprint", "info", "debug", "warning", "warn", "error", "exception", "critical", "log",
                  "add_text", "set_description", "set_postfix", "print_exc", "warn"}


def is_display_call(call: cst.Call) -> bool:
    """print / logging / progress-bar calls: text there is only shown, never scored."""
    tail = call_tail(call)
    if tail in _DISPLAY_CALLS:
        return True
    if tail == "write" and isinstance(call.func, cst.Attribute):
        target = call.func.value
        name = target.attr.value if isinstance(target, cst.Attribute) else getattr(target, "value", "")
        return name in ("stdout", "stderr", "tqdm", "console")
    return False


_TABLE_CALLS = {"add_data", "add_row", "Table"}  # rows of a metrics table (wandb, rich): shown, not scored


def _shown(call: cst.Call) -> bool:
    return is_display_call(call) or call_tail(call) in _TABLE_CALLS


class FragileThinkSplit(FunctionRule):
    """
    ## What it does
    Reports answer extraction after a closing reasoning marker (`</think>`,
    `</reasoning>`, `<|end_of_thought|>`...) that breaks one of the three cases a
    completion can be in: `split("</think>")[1]`, `split("</think>")[-1]`,
    `rsplit(...)`, `partition(...)[2]`, `rpartition(...)[2]`, or slicing from a
    `find`/`index` of the marker, in a function that checks neither for the opening
    marker nor whether the closing one is there (`"</think>" in text`).

    ## Why is this bad?
    A completion is plain text (no reasoning: keep it), closed reasoning
    (`<think>..</think>answer`: keep what follows the first closing marker) or
    unclosed reasoning (`<think>...` cut off by the length limit: there is no
    answer). `split(...)[1]` raises IndexError on plain text (a slice from `index(...)`,
    ValueError); `[-1]`, `rpartition`
    and `find` return the whole unfinished reasoning as the "answer" when the
    marker is missing, so a truncated chain of thought that happens to mention the
    right number is rewarded; `partition(...)[2]` scores plain answers as empty.

    ## Example
    ```python
    def extract_answer(completion: str) -> str:
        return completion.split("</think>")[-1].strip()
    ```

    ## Use instead
    ```python
    def extract_answer(completion: str) -> str:
        if "</think>" not in completion:
            return "" if "<think>" in completion else completion.strip()
        return completion.split("</think>", 1)[1].strip()
    ```

    ## Options
    None.
    """

    code = "RL301"
    name = "fragile-think-split"
    severity = Severity.WARNING
    message = "`{expr}` takes the text after `{marker}` without handling {case}: {consequence}"
    triggers = ("think>", "reasoning>", "_of_thought", "thought>")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not may_extract(node):
            return
        found = extraction(node, self.file.fact(Scopes), self.scope)
        if found is None or not is_reasoning_close(found.marker):
            return
        if self.file.fact(MarkerChecks).checks_reasoning_open(self.scope) or self._tests_close(self.scope):
            return
        if found.kind == "split" and found.index == 1:
            case, consequence = "plain text", "a completion without the marker raises IndexError"
        elif found.kind in ("index", "rindex"):
            case, consequence = "plain text", "a completion without the marker raises ValueError"
        elif found.kind == "partition":
            case, consequence = "plain text", "a completion without reasoning is scored as empty"
        else:
            case = "unclosed reasoning"
            consequence = "a completion cut off inside its reasoning is scored on that reasoning"
        self.report(node, expr=self.source(node), marker=found.marker, case=case, consequence=consequence)

    def _tests_close(self, scope: Scope) -> bool:
        """`if "</think>" in text: text.split("</think>")[-1]`: the function knows whether reasoning was closed."""
        scopes = self.file.fact(Scopes)
        return any(isinstance(c.operator, (cst.In, cst.NotIn))
                   and is_reasoning_close(scopes.string(test.left, scope) or "")
                   for test in scope.comparisons for c in test.comparisons)


class ThinkRegexWithoutDotall(FunctionRule):
    """
    ## What it does
    Reports a regular expression over reasoning markers (`<think>`, `<reasoning>`,
    `<|begin_of_thought|>`...) that uses `.*`, `.+` or `.*?` without `re.DOTALL`
    (`re.S`, `(?s)`).

    ## Why is this bad?
    Without DOTALL, `.` does not match a newline, and reasoning is almost always
    several lines long: the pattern matches nothing, so a format reward scores every
    real completion 0 and the extractor finds no answer (open-r1 #237).

    ## Example
    ```python
    FORMAT = re.compile(r"^<think>.*?</think>\\s*<answer>.*?</answer>$")
    ```

    ## Use instead
    ```python
    FORMAT = re.compile(r"^<think>.*?</think>\\s*<answer>.*?</answer>$", re.DOTALL)
    ```
    or `[\\s\\S]*?` in place of `.*?`.

    ## Options
    None.
    """

    code = "RL302"
    name = "think-regex-without-dotall"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "pattern {pattern} uses `.` across reasoning markers without re.DOTALL: multi-line reasoning never matches"
    triggers = ("think>", "reasoning>", "_of_thought", "thought>")

    def visit_Call(self, node: cst.Call) -> None:
        imports = self.file.fact(Imports)
        if call_tail(node) not in RE_FUNCTIONS and not (
                isinstance(node.func, cst.Name) and node.func.value in imports.aliases):
            return
        # depth=1: a compiled pattern is reported where it is compiled, not at each `.match` of it
        found = regex_of(node, imports, self.file.fact(Scopes), self.scope, depth=1)
        if found is None or found.dotall is not False or not REASONING_MARKER.search(found.pattern):
            return
        if found.wildcard():
            shown = found.pattern if len(found.pattern) <= 50 else found.pattern[:47] + "..."
            self.report(node, pattern=repr(shown))


class DecodeKeepsPadding(FunctionRule):
    """
    ## What it does
    Reports, in RL code, `decode` / `batch_decode` of generated or completion ids by a Hugging
    Face tokenizer or processor without `skip_special_tokens=True` whose text goes on (returned,
    appended to a list of completions, passed to a reward or scoring function) and is never
    stripped of the pad and EOS tokens in the function, nor cut at them (`s.split("<|eot_id|>")[0]`)
    by a project function it is given to (a scoring method, the reward functions it calls, here or
    in another module). Ids cut to their real length or filtered by a mask before decoding are not
    reported, nor is decoding in other ML code (latents of an autoencoder, samples of an SFT
    evaluation).

    The tokenizer must be proven Hugging Face's: loaded with `from_pretrained` (here, or by a
    caller that passes it), an instance of a project class whose own `decode` takes
    `skip_special_tokens` or that inherits a transformers tokenizer's, or an object the code uses
    through the API only those have (`batch_decode`, `skip_special_tokens=`, `apply_chat_template`,
    `pad_token_id`, `tokenizer(texts, return_tensors=...)`). A project tokenizer whose visible
    `decode` takes no such keyword (a tiktoken or SentencePiece wrapper) is not reported, nor is a
    tokenizer from out of sight that is only decoded with.

    ## Why is this bad?
    Batched generation pads every completion to the longest one, and a finished
    completion ends with EOS. Decoded without skipping special tokens, completions
    end in `<|endoftext|><|endoftext|>...`: exact-match and format rewards anchored
    at the end (`$`, `endswith`) fail, and length rewards count the padding.

    ## Example
    ```python
    completions = tokenizer.batch_decode(completion_ids)
    rewards = reward_fn(completions)
    ```

    ## Use instead
    ```python
    completions = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    ```
    or strip them: `text.replace(tokenizer.pad_token, "")`.

    ## Options
    None.
    """

    code = "RL303"
    name = "decode-keeps-padding"
    severity = Severity.WARNING
    message = "`{expr}` decodes generated ids with their padding and EOS tokens, and the text goes on to {where}"
    triggers = ("decode(",)

    def visit_Call(self, node: cst.Call) -> None:
        if call_tail(node) not in ("decode", "batch_decode") or not isinstance(node.func, cst.Attribute):
            return
        skip = keyword(node, "skip_special_tokens")
        if skip is not None and number(skip.value) != 0.0:
            return
        ids = positional(node, 0)
        if ids is None or any(a.star for a in node.args) or not self.file.fact(Purpose).rl_code:
            return  # decoding (of latents, of SFT samples) is everywhere in ML code: only RL code's matters here
        scope = self.scope
        if self.file.fact(TextRoles).role(ids, scope) != GEN_IDS or _trimmed(ids, scope):
            return
        where = _onward_use(node, scope)
        if where is None or _strips_special_tokens(scope) or \
                not self.file.fact(TokenizerFacts).hugging_face(node, scope) or self._consumers_cut(node, scope):
            return
        self.report(node, expr=self.source(node), where=where)

    def _consumers_cut(self, decode: cst.Call, scope: Scope) -> bool:
        """A project function the text is given to (a scoring method, the reward functions it calls, here or in
        another module) cuts it at the EOS or strips the special tokens (`s.split("<|eot_id|>")[0]`,
        `s.replace(tok.pad_token, "")`): they are kept on purpose and removed where the text is read."""
        names = _derived(scope.node, {name for name, values in scope.assigned.items()
                                      if any(any(n is decode for n in walk(v)) for v in values)})
        flow = self.file.fact(Flow)
        return any(_function_cuts(flow, call, _reads(call, decode, names), 0) for call in scope.calls
                   if not is_display_call(call))


_CUTS = frozenset({"replace", "strip", "rstrip", "removesuffix", "split", "rsplit", "partition", "rpartition", "sub",
                   "index", "find", "rfind"})
_CONSUMER_DEPTH = 3


def _reads(call: cst.Call, decode: cst.Call, names: Set[str]) -> List[cst.Arg]:
    """The arguments of `call` that are the decoded text or a name holding it."""
    return [a for a in call.args if any(n is decode or isinstance(n, cst.Name) and n.value in names
                                        for n in walk(a.value))]


def _function_cuts(flow: Flow, call: cst.Call, given: List[cst.Arg], depth: int) -> bool:
    """The project function `call` runs is given the text (`given`) and cuts it at an end or pad token, or hands
    it (a name bound or iterated from its parameter) to a function that does."""
    if not given or depth > _CONSUMER_DEPTH:
        return False
    callee = flow.value(call.func)
    function = callee.facts.get("function")
    if function is None and callee.facts.get("qual"):  # `from rewards import exact`: a project module's function
        function = flow.imported(callee.facts["qual"], callee.facts.get("level", 0))
    if not isinstance(function, FunctionIR) or function.is_module:
        return False
    method = function.cls is not None and isinstance(call.func, cst.Attribute)
    bound = function.bind(call, method=method)
    texts = {name for name, value in bound.items() if any(value is a.value for a in given)}
    if not texts:
        return False
    body = function.node.body
    texts = _derived(body, texts)
    inner = function.module.flow
    for node in walk(body):
        if not isinstance(node, cst.Call):
            continue
        if call_tail(node) in _CUTS and isinstance(node.func, cst.Attribute) and any(
                isinstance(n, cst.Name) and n.value in texts for n in walk(node.func.value)) and any(
                _end_token(n) for a in node.args for n in walk(a.value)):
            return True
        if _function_cuts(inner, node, [a for a in node.args if any(
                isinstance(n, cst.Name) and n.value in texts for n in walk(a.value))], depth + 1):
            return True
    return False


def _derived(body: cst.CSTNode, texts: Set[str]) -> Set[str]:
    """`texts` and the names bound or iterated from them in `body` (`for i, t in enumerate(texts)`)."""
    texts = set(texts)
    for _ in range(4):
        for node in walk(body):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else \
                [node.target] if isinstance(node, (cst.For, cst.CompFor)) else []
            source = node.iter if isinstance(node, (cst.For, cst.CompFor)) else getattr(node, "value", None)
            if targets and source is not None and any(isinstance(n, cst.Name) and n.value in texts
                                                      for n in walk(source)):
                texts.update(n.value for t in targets for n in walk(t) if isinstance(n, cst.Name))
    return texts


def _end_token(node: cst.CSTNode) -> bool:
    """`tokenizer.eos_token`, `tok.pad_token`, or an end or pad token spelt out (`"<|eot_id|>"`)."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in ("pad_token", "eos_token", "all_special_tokens")
    text = literal_text(node) if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) else None
    return text is not None and any(token in text for token in END_TOKENS)


def _strips_special_tokens(scope: Scope) -> bool:
    """The function removes pad / EOS tokens from text somewhere (`replace`, `strip`, `split`)."""
    for call in scope.calls:
        if call_tail(call) in ("replace", "strip", "rstrip", "removesuffix", "split", "sub") and any(
                isinstance(n, cst.Attribute) and n.attr.value in ("pad_token", "eos_token", "all_special_tokens")
                for arg in call.args for n in walk(arg.value)):
            return True
    return False


def _trimmed(ids: cst.BaseExpression, scope: Scope) -> bool:
    """The ids were cut to their real length or filtered by a mask before decoding
    (`ids[:length]`, `ids[mask]`, `ids[ids != pad]`): no padding is left to decode."""
    if isinstance(ids, cst.Name) and isinstance(scope.node, cst.FunctionDef):
        param = scope.params.get(ids.value)
        if param is not None and param.annotation is not None and _one_sequence(param.annotation.annotation):
            return True  # `ids: list[int]`: one sequence as generated, not a padded batch row
    pending, seen = [ids], set()
    while pending:
        for node in walk(pending.pop()):
            if isinstance(node, cst.Subscript):
                for element in node.slice:
                    key = element.slice
                    if isinstance(key, cst.Slice) and key.upper is not None and number(key.upper) is None:
                        return True
                    if isinstance(key, cst.Index) and isinstance(key.value, (cst.Comparison, cst.Call)):
                        return True
                    if isinstance(key, cst.Index) and isinstance(key.value, cst.Name) and "mask" in key.value.value:
                        return True
            if isinstance(node, cst.Name) and node.value not in seen:
                seen.add(node.value)
                pending.extend(scope.assigned.get(node.value, ()))
    return False


def _one_sequence(annotation: cst.BaseExpression) -> bool:
    """`list[int]`, `List[int]`, `Sequence[int]`."""
    return isinstance(annotation, cst.Subscript) and attr_tail(annotation.value) in ("list", "List", "Sequence") \
        and len(annotation.slice) == 1 and isinstance(annotation.slice[0].slice, cst.Index) \
        and isinstance(annotation.slice[0].slice.value, cst.Name) and annotation.slice[0].slice.value.value == "int"


_SCORING_WORDS = ("reward", "score", "judge", "grade", "verify", "verifier", "evaluate")


def _onward_use(decode: cst.Call, scope: Scope) -> Optional[str]:
    """Where the decoded text goes: returned, collected in a list, or given to a scorer."""
    for ret in scope.returns:
        if ret.value is not None and any(n is decode for n in walk(ret.value)):
            return "the caller"
    names = [name for name, values in scope.assigned.items() if any(any(n is decode for n in walk(v)) for v in values)]
    for call in scope.calls:
        if is_display_call(call):
            continue
        for arg in call.args:
            direct = arg.value is decode or (isinstance(arg.value, cst.Name) and arg.value.value in names)
            if direct and call_tail(call) in ("append", "extend"):
                return "a list of completions"
            tail = (call_tail(call) or "").lower()
            if direct and any(w in tail for w in _SCORING_WORDS):
                return f"`{call_tail(call)}`"
    for ret in scope.returns:
        if ret.value is not None and any(isinstance(n, cst.Name) and n.value in names for n in walk(ret.value)):
            return "the caller"
    return None


class SkipSpecialTokensStripsCustom(FunctionRule):
    """
    ## What it does
    Reports `decode` / `batch_decode(..., skip_special_tokens=True)` of completions in a
    file that registers its own special tokens
    (`add_special_tokens({"additional_special_tokens": [...]})`,
    `add_tokens([...], special_tokens=True)`). Chat control and padding tokens
    (`<|im_start|>`, `<pad>`) do not count.

    ## Why is this bad?
    `skip_special_tokens=True` removes every special token, the registered tags
    included: the `<answer>` or `<tool_call>` markers the reward parser looks for are
    gone from the decoded text, and every completion scores as unformatted.

    ## Example
    ```python
    tokenizer.add_special_tokens({"additional_special_tokens": ["<answer>", "</answer>"]})
    texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=True)
    ```

    ## Use instead
    ```python
    texts = tokenizer.batch_decode(completion_ids, skip_special_tokens=False)
    texts = [t.replace(tokenizer.pad_token, "").replace(tokenizer.eos_token, "") for t in texts]
    ```

    ## Options
    None.
    """

    code = "RL304"
    name = "skip-special-tokens-strips-custom"
    severity = Severity.WARNING
    message = "`{expr}` removes the registered special tokens {tokens} from the text the rewards parse"
    triggers = ("additional_special_tokens", "special_tokens=True")

    def visit_Call(self, node: cst.Call) -> None:
        if call_tail(node) not in ("decode", "batch_decode") or not isinstance(node.func, cst.Attribute):
            return
        skip = keyword(node, "skip_special_tokens")
        if skip is None or number(skip.value) != 1.0:
            return
        tokens = self.file.fact(TokenizerFacts).custom_tokens
        ids = positional(node, 0)
        if not tokens or ids is None:
            return
        if self.file.fact(TextRoles).role(ids, self.scope) in (PROMPT, PROMPTS):
            return
        shown = ", ".join(tokens[:3]) + (", ..." if len(tokens) > 3 else "")
        self.report(node, expr=self.source(node), tokens=shown)


class CompletionStringSlice(FunctionRule):
    """
    ## What it does
    Reports constant-bound slicing of completion text (`completion[:3000]`,
    `text[-500:]`, `resp[:MAX_CHARS]`) on its way to a reward, a judge, a dataset or a
    saved rollout. Completion text is a string decoded from generated ids or received
    as the completion/response argument of a reward or scoring function, including
    verl's `compute_score(data_source, solution_str, ...)`. Slices inside `print`,
    logging calls, f-strings and metrics tables (display), slices assigned to a
    variable that only reaches them, cuts whose alternative is the whole text
    (`text if log_full else text[:500]`) and slices of ids, masks and tensors are
    not reported.

    On by default in this one form, where the text is proven to be a completion: decoded from
    the ids `generate` returned (a decoded dataset row, label span or encoded prompt is not),
    the completions argument of a reward or scoring function, or a helper's parameter that
    every caller fills with such text (the slice in the helper is reported unless every call
    only shows its result). A slice reaches a scorer through locals and helpers; one that only
    reaches `print`, logging or a metrics table, also one assignment later and inside a
    concatenation (`preview = text[:400] + " ... " + text[-400:]; logger.info(preview)`), is a
    preview. In a test, or an evaluation script (it generates, trains nothing, and only tests import
    it), a cut kept in a result record beside the whole text's grade
    (`results.append({"correct": grade(text), "generated": text[:500]})`) is a result, not data.
    No option or selection widens it.

    ## Why is this bad?
    Reasoning models put the answer at the end. Cutting the completion to its first
    N characters scores a different text than the model wrote: long correct
    completions get 0, and the policy learns to be short for the wrong reason;
    keeping only the last N characters hides a format violation earlier on (verl
    #7274).

    ## Example
    ```python
    def judge_reward(prompts, completions, **kwargs):
        return [judge(JUDGE.format(q=p, response=c[:3000])) for p, c in zip(prompts, completions, strict=True)]
    ```

    ## Use instead
    Limit the length in tokens at generation time (`max_completion_length`), and
    give the scorer the whole completion; if a judge has a context limit, count
    truncation as a failure explicitly.

    ## Options
    None.
    """

    code = "RL305"
    name = "completion-string-slice"
    severity = Severity.WARNING
    message = "`{expr}` truncates the completion before {user}: {lost} is lost"
    triggers = ("completion", "response", "decode", "solution_str", "generat", "reward", "score")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._display = 0
        self._equality: Set[int] = set()
        self._assigned_to: Dict[int, str] = {}  # a slice assigned to a name: the name

    def visit_Call(self, node: cst.Call) -> None:
        if _shown(node):
            self._display += 1

    def leave_Call(self, original_node: cst.Call) -> None:
        if _shown(original_node):
            self._display -= 1

    def visit_IfExp(self, node: cst.IfExp) -> None:
        """`text if full else text[:500]`: the whole text is the other branch, a setting chooses the cut."""
        code = self.file.module.code_for_node
        for cut, whole in ((node.body, node.orelse), (node.orelse, node.body)):
            if isinstance(cut, cst.Subscript) and code(cut.value) == code(whole):
                self._equality.add(id(cut))

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._display += 1

    def leave_FormattedString(self, original_node: cst.FormattedString) -> None:
        self._display -= 1

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if any(isinstance(c.operator, (cst.Equal, cst.NotEqual)) for c in node.comparisons):
            self._equality.update(id(n) for n in [node.left] + [c.comparator for c in node.comparisons])

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Add) and any(
                (literal_text(side) or "").strip() in ("...", "\u2026", "[...]", "(truncated)") for side in (node.left, node.right)):
            self._equality.update((id(node.left), id(node.right)))  # `text[:200] + "..."`: a preview

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name) and set(words(target.target.value)) & _DISPLAY_WORDS:
                self._equality.add(id(node.value))
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            for held in _carried(node.value):  # `preview = text[:400] + " ... " + text[-400:]` holds both cuts
                self._assigned_to[id(held)] = node.targets[0].target.value

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self._display or id(node) in self._equality or len(node.slice) != 1:
            return
        key = node.slice[0].slice
        if not isinstance(key, cst.Slice) or key.step is not None:
            return
        if not isinstance(node.value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)):
            return
        bounds = [b for b in (key.lower, key.upper) if b is not None]
        if len(bounds) != 1 or not isinstance(bounds[0], (cst.Integer, cst.UnaryOperation, cst.Name, cst.Attribute)):
            return
        passed = False
        if self.file.fact(TextRoles).role(node.value, self.scope) != TEXT:
            passed = self._completion_from_callers(node.value)
            if not passed:
                return
        bound = self._truncation(key)
        if bound is None or self._only_shown(self._assigned_to.get(id(node))):
            return
        if self._result_record(node):
            return
        if passed and self._callers_only_show(node):
            return
        function = self.function
        if function is not None and self.file.fact(RewardFunctions).is_reward(function):
            user = f"`{function.name.value}` scores it"
        else:
            user = "it is used"
        lost = f"text past character {bound}" if bound > 0 else f"everything before the last {-bound} characters"
        self.report(node, expr=self.source(node), user=user, lost=lost)

    def _completion_from_callers(self, text: cst.BaseExpression) -> bool:
        """Whether the engine follows completion text into `text` from every caller of this helper (a parameter
        that each call site fills with decoded completions)."""
        if self.function is None or not isinstance(text, cst.Name):
            return False
        value = self.file.fact(Flow).value(text)
        return value.facts.get("type") == TEXT_VALUE and value.facts.get("text") == COMPLETION

    def _callers_only_show(self, node: cst.Subscript) -> bool:
        """The helper returns the cut text (`return text[:N]`, or a name that holds it) and every call of it is
        shown only (a print, a log call, an f-string, a metrics table, or a name that only reaches them)."""
        flow = self.file.fact(Flow)
        function = next((f for f in flow.ir.all_functions() if f.node is self.function), None)
        if function is None:
            return False
        held = self._assigned_to.get(id(node))
        returned = any(ret.value is node or (held is not None and isinstance(ret.value, cst.Name)
                                             and ret.value.value == held) for ret in function.returns)
        sites = flow.callers(function)
        return returned and bool(sites) and all(_shown_call(site) for site in sites)

    def _only_shown(self, name: Optional[str]) -> bool:
        """Every read of `name` in the function is inside a print, a log call, an f-string or a metrics
        table: the cut text is a preview."""
        return _reads_only_shown(self.function or self.file.module, name)

    def _result_record(self, node: cst.Subscript) -> bool:
        """A cut of a text that is graded whole, kept as a field of a record (directly, or through a name that
        only records and display read), in code that only evaluates: a test, or a script that generates,
        trains nothing and no project file but tests imports, whose record also holds the whole text's grade.
        The record is a result for people to read, not a reward, a judge's input or training data."""
        body = self.function or self.file.module
        if not isinstance(node.value, cst.Name) or not _grades(body, node.value.value):
            return False
        purpose = self.file.fact(Purpose)
        if not purpose.is_test and not self._standalone_evaluation():
            return False
        fields = _record_fields(body, None if purpose.is_test else node.value.value)
        return id(node) in fields or _reads_only_shown(body, self._assigned_to.get(id(node)), fields)

    def _standalone_evaluation(self) -> bool:
        """The file generates and trains nothing, and no project file imports it but tests, which check it and
        do not consume its records."""
        index = self.file.fact(ProjectIndex)
        here = os.path.dirname(os.path.abspath(self.file.path))
        return self.file.fact(Purpose).kind == EVALUATION and index.enabled and all(
            is_test_path(os.path.relpath(path, here)) for path, _ in index.importers())

    def _truncation(self, key: cst.Slice) -> Optional[int]:
        """N of `[:N]` (N > 1) or `[-N:]` when N is a constant the source shows."""
        if key.lower is None and key.upper is not None:
            value = self._constant(key.upper)
            return int(value) if value is not None and value > 1 else None
        if key.upper is None and key.lower is not None:
            value = self._constant(key.lower)
            return int(value) if value is not None and value < -1 else None
        return None

    def _constant(self, expr: cst.BaseExpression) -> Optional[float]:
        value = number(expr)
        if value is not None:
            return value
        if isinstance(expr, (cst.Name, cst.Attribute, cst.UnaryOperation)):  # `-MAX_TAIL` resolves through the name
            resolved = self.file.fact(Values).of(expr)
            return None if resolved is None else float(resolved.number)
        return None


def _carried(expr: cst.BaseExpression) -> List[cst.BaseExpression]:
    """`expr` and the parts whose text it holds: both sides of a concatenation, both branches of a conditional,
    the receiver of a string method that keeps the text (`strip`, `replace`...), the items of a list, tuple,
    set or dict written out."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return [expr] + _carried(expr.left) + _carried(expr.right)
    if isinstance(expr, cst.IfExp):
        return [expr] + _carried(expr.body) + _carried(expr.orelse)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and call_tail(expr) in STR_METHODS:
        return [expr] + _carried(expr.func.value)
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):  # `sample = [texts[0][:200], texts[1][:200]]`
        return [expr] + [held for element in expr.elements for held in _carried(element.value)]
    if isinstance(expr, cst.Dict):
        return [expr] + [held for element in expr.elements if isinstance(element, cst.DictElement)
                         for held in _carried(element.value)]
    return [expr]


def _record_fields(body: cst.CSTNode, graded: Optional[str]) -> Set[int]:
    """Nodes inside the fields of dict literals that are records: kept, appended, written or dumped, not handed
    to another call (`results.append({"generated": text[:500]})`, not `judge({"response": text[:500]})`).
    With `graded`, only records that also hold a value computed from that whole text (its grade)."""
    handed: Set[int] = set()
    fields: Set[int] = set()
    for node in walk(body):
        if isinstance(node, cst.Call) and call_tail(node) not in _RECORD_CALLS:
            handed.update(id(n) for arg in node.args for n in walk(arg.value))
    for node in walk(body):
        if isinstance(node, cst.Dict) and id(node) not in handed:
            values = [element.value for element in node.elements if isinstance(element, cst.DictElement)]
            if graded is None or any(_computed_from(body, value, graded) for value in values):
                fields.update(id(n) for value in values for n in walk(value))
    return fields - handed


def _grades(expr: cst.CSTNode, name: str) -> bool:
    """`name` itself is given to a call under `expr` that is not display (`grade(text, gold)`, `extract(text)`)."""
    return any(isinstance(node, cst.Call) and not _shown(node) and any(
        isinstance(arg.value, cst.Name) and arg.value.value == name for arg in node.args) for node in walk(expr))


def _computed_from(body: cst.CSTNode, expr: cst.BaseExpression, name: str, depth: int = 0) -> bool:
    """`expr` is computed from the whole text `name`: it grades it, or reads a local assigned from such a value
    (`pred = extract(text)`, `ok = pred == gold`, a few steps back)."""
    if _grades(expr, name):
        return True
    if depth >= 3:
        return False
    locals_read = {n.value for n in walk(expr) if isinstance(n, cst.Name) and n.value != name}
    return any(isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
               and node.targets[0].target.value in locals_read and _computed_from(body, node.value, name, depth + 1)
               for node in walk(body))


def _reads_only_shown(body: cst.CSTNode, name: Optional[str], records: Set[int] = frozenset()) -> bool:
    """Every read of `name` in `body` is inside a print, a log call, an f-string or a metrics table (or one of
    the `records` nodes, the fields of result records)."""
    if name is None:
        return False
    shown: Set[int] = set(records)
    written: Set[int] = set()
    for node in walk(body):
        if (isinstance(node, cst.Call) and _shown(node)) or isinstance(node, cst.FormattedString):
            shown.update(id(n) for n in walk(node))
        elif isinstance(node, cst.Assign):
            written.update(id(n) for t in node.targets for n in walk(t.target))
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
            written.update(id(n) for n in walk(node.target))
    reads = [n for n in walk(body) if isinstance(n, cst.Name) and n.value == name and id(n) not in written]
    return bool(reads) and all(id(n) in shown for n in reads)


def _shown_call(site) -> bool:
    """A call site whose result is only shown: inside a print, a log call, an f-string or a metrics table, or
    assigned to a name that only reaches them."""
    body = site.function.node
    for node in walk(body):
        if ((isinstance(node, cst.Call) and _shown(node)) or isinstance(node, cst.FormattedString)) and \
                any(inner is site.node for inner in walk(node)):
            return True
    statement = site.statement
    if isinstance(statement, cst.Assign) and statement.value is site.node and len(statement.targets) == 1 and \
            isinstance(statement.targets[0].target, cst.Name):
        return _reads_only_shown(body, statement.targets[0].target.value)
    return False


# Chat-template control tokens that only a template should write.
_CHAT_TOKENS = ("<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "[INST]",
                "[/INST]", "<start_of_turn>", "<end_of_turn>", "<|user|>", "<|assistant|>", "<|system|>")
_EMPTY_THINK = re.compile(r"<think>[ \t]*(?:\n|\\n)(?:\s|\\n)*</think>")
# Calls whose string arguments name tokens or parse output: tokenizer set-up, stop strings, parsing.
_TOKEN_CALLS = {"add_special_tokens", "add_tokens", "convert_tokens_to_ids", "token_to_id", "encode", "split",
                "rsplit", "replace", "strip", "rstrip", "lstrip", "endswith", "startswith", "count", "find", "rfind",
                "index", "rindex", "partition", "rpartition", "removesuffix", "removeprefix", "sub", "search",
                "match", "findall", "fullmatch", "compile", "escape", "get", "apply_chat_template", "get_vocab"}
_TOKEN_KEYWORDS = {"stop", "stop_strings", "stop_sequences", "stop_words", "eos_token", "pad_token", "bos_token",
                   "chat_template", "additional_special_tokens", "stop_token", "stop_tokens", "end_token"}


def _chat_tokens(text: str) -> List[str]:
    found = [t for t in _CHAT_TOKENS if t in text]
    if _EMPTY_THINK.search(text):
        found.append("<think></think>")
    return found


def _only_tokens(text: str) -> bool:
    if _EMPTY_THINK.search(text):
        return False  # an empty reasoning block is prompt text, not a token name
    for token in _CHAT_TOKENS:
        text = text.replace(token, "")
    return not text.replace("\\n", "").strip()


def _parsing_names(module: cst.Module) -> Set[str]:
    """Names whose every read is an argument of a parsing call (`find`, `split`, `replace`...) or an operand
    of a comparison (`tag in text`)."""
    reads: Dict[str, int] = {}
    parsing: Dict[str, int] = {}
    for node in walk(module, into_functions=True):
        if isinstance(node, cst.Call) and call_tail(node) in _TOKEN_CALLS:
            for arg in node.args:
                if isinstance(arg.value, cst.Name):
                    parsing[arg.value.value] = parsing.get(arg.value.value, 0) + 1
        elif isinstance(node, cst.Comparison):
            for operand in [node.left] + [c.comparator for c in node.comparisons]:
                if isinstance(operand, cst.Name):
                    parsing[operand.value] = parsing.get(operand.value, 0) + 1
        elif isinstance(node, cst.Name):
            reads[node.value] = reads.get(node.value, 0) + 1
    stored = {t.target.value for n in walk(module, into_functions=True) if isinstance(n, cst.Assign)
              for t in n.targets if isinstance(t.target, cst.Name)}
    return {name for name in stored if parsing.get(name) and reads.get(name, 0) - parsing[name] == 1}


def _chat_template_names(module: cst.Module) -> Set[str]:
    """Names assigned to a tokenizer's `chat_template` or passed as `chat_template=`."""
    found: Set[str] = set()
    for node in walk(module, into_functions=True):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and any(
                isinstance(t.target, cst.Attribute) and t.target.attr.value == "chat_template" for t in node.targets):
            found.add(node.value.value)
        elif isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "chat_template" \
                and isinstance(node.value, cst.Name):
            found.add(node.value.value)
    return found


def _defines_template(node: cst.ClassDef) -> bool:
    """A renderer or chat-template class: its job is to write the control tokens."""
    names = [node.name.value] + [b.value.attr.value if isinstance(b.value, cst.Attribute) else
                                 getattr(b.value, "value", "") for b in node.bases]
    return any("render" in n.lower() or "template" in n.lower() for n in names if isinstance(n, str))


class HandWrittenChatTemplate(CSTRule):
    """
    ## What it does
    Reports string literals that write chat-template control tokens (`<|im_start|>`,
    `<|im_end|>`, `<|start_header_id|>`, `<|eot_id|>`, `[INST]`, `<start_of_turn>`,
    `<|user|>`, `<|assistant|>`, an empty `<think>\\n\\n</think>`) into prompt text,
    in RL code outside tests (named by `--select RL307`: also in a module that loads a tokenizer or builds a
    generation engine, such as the prompt module a trainer imports). Token names in tokenizer set-up (`add_special_tokens`,
    `convert_tokens_to_ids`), stop strings, `split`/`replace` on model output and
    markers read only by such parsing calls, the content of assistant messages (a
    reply, not a prompt), messages of `assert`, `raise` and logging, Jinja
    chat-template definitions and renderer or template classes (whose job is to write
    these tokens) are not reported.

    ## Why is this bad?
    A hand-written template drifts from the model's own: a missing newline, a system
    prompt the model was not trained with, a BOS added twice or a `<think>` block the
    template would have added. The policy then trains on prompts it never sees at
    inference, and a mismatch in the token boundaries changes the log-probs.

    ## Example
    ```python
    prompt = f"<|im_start|>user\\n{question}<|im_end|>\\n<|im_start|>assistant\\n"
    ```

    ## Use instead
    ```python
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True)
    ```

    ## Options
    None.
    """

    code = "RL307"
    name = "hand-written-chat-template"
    severity = Severity.WARNING
    tier = Tier.PEDANTIC  # on the primer: deliberate templates that match the model, no bug
    message = "string literal writes the chat-template tokens {tokens} by hand: use tokenizer.apply_chat_template"
    triggers = _CHAT_TOKENS + ("<think>",)

    def __init__(self, file) -> None:
        super().__init__(file)
        self._quiet = 0  # inside token set-up, parsing calls, comparisons, token assignments, docstrings
        self._assembling = 0  # inside `+`, `%` or `.format` that builds text
        self._quiet_args: Set[int] = set()
        self._outputs: Set[int] = set()  # dict entries that hold an assistant reply
        self._parsing: Optional[Set[str]] = None  # names read only by parsing calls and comparisons
        self._templates: Optional[Set[str]] = None  # names given to `tokenizer.chat_template` / `chat_template=`
        self._reported_statement: Optional[cst.CSTNode] = None  # one finding per statement
        self._statement: Optional[cst.CSTNode] = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and literal_text(node.body[0].value) is not None:
            self._quiet += 1  # a docstring or a bare string statement

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        body = original_node.body
        if len(body) == 1 and isinstance(body[0], cst.Expr) and literal_text(body[0].value) is not None:
            self._quiet -= 1

    def visit_Call(self, node: cst.Call) -> None:
        if call_tail(node) in _TOKEN_CALLS or is_display_call(node):
            self._quiet_args.update(id(a) for a in node.args)
        if call_tail(node) == "dict" and isinstance(node.func, cst.Name):
            role, content = keyword(node, "role"), keyword(node, "content")
            if role is not None and content is not None and literal_text(role.value) == "assistant":
                self._quiet_args.add(id(content))
        if call_tail(node) == "format" and isinstance(node.func, cst.Attribute) and literal_text(node.func.value):
            self._check(node.func.value, assembling=True)

    def visit_Dict(self, node: cst.Dict) -> None:
        """The content of an assistant message is the model's reply (training data, a fixture), not a prompt."""
        entries = {literal_text(e.key): e for e in node.elements if isinstance(e, cst.DictElement)}
        if "content" in entries and "role" in entries and literal_text(entries["role"].value) == "assistant":
            self._outputs.add(id(entries["content"]))

    def visit_DictElement(self, node: cst.DictElement) -> None:
        if id(node) in self._outputs:
            self._quiet += 1

    def leave_DictElement(self, original_node: cst.DictElement) -> None:
        if id(original_node) in self._outputs:
            self._quiet -= 1

    def visit_Arg(self, node: cst.Arg) -> None:
        if id(node) in self._quiet_args or (node.keyword is not None and node.keyword.value in _TOKEN_KEYWORDS):
            self._quiet += 1

    def leave_Arg(self, original_node: cst.Arg) -> None:
        if id(original_node) in self._quiet_args or (
                original_node.keyword is not None and original_node.keyword.value in _TOKEN_KEYWORDS):
            self._quiet -= 1

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._quiet += 1

    def leave_Comparison(self, original_node: cst.Comparison) -> None:
        self._quiet -= 1

    def visit_Assert(self, node: cst.Assert) -> None:
        self._quiet += 1

    def leave_Assert(self, original_node: cst.Assert) -> None:
        self._quiet -= 1

    def visit_Raise(self, node: cst.Raise) -> None:
        self._quiet += 1

    def leave_Raise(self, original_node: cst.Raise) -> None:
        self._quiet -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if _defines_template(node):
            self._quiet += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        if _defines_template(original_node):
            self._quiet -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._token_target(node.targets) or self._parsing_target(node.targets):
            self._quiet += 1

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if self._token_target(original_node.targets) or self._parsing_target(original_node.targets):
            self._quiet -= 1

    def _parsing_target(self, targets) -> bool:
        """`tag = "<|im_start|>user"` read only by `text.find(tag)`, `split`, `in`: a marker to parse with."""
        if self._parsing is None:
            self._parsing = _parsing_names(self.file.module)
        return len(targets) == 1 and isinstance(targets[0].target, cst.Name) and \
            targets[0].target.value in self._parsing

    def _token_target(self, targets) -> bool:
        """Targets that hold token names, stop strings, a chat template or a model's output. A variable is a chat
        template by where it goes (`tokenizer.chat_template = X`, `chat_template=X`), not by its name: a
        `*_TEMPLATE` string that is formatted into prompts is a hand-written prompt."""
        if self._templates is None:
            self._templates = _chat_template_names(self.file.module)
        for target in targets:
            node = target.target
            name = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else ""
            lowered = name.lower()
            words = ("token", "stop", "eos", "special", "marker", "tag") + (
                ("template",) if isinstance(node, cst.Attribute) else ())
            if name in self._templates or any(w in lowered for w in words) and not any(
                    w in lowered for w in ("prompt", "user", "assistant", "system", "format", "turn", "header")):
                return True
            if any(w in lowered for w in ("response", "completion", "output", "generation")) and "prompt" not in lowered:
                return True  # a model's output (a test fixture, a parsed reply), not a prompt
        return False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, (cst.Add, cst.Modulo)):
            self._assembling += 1

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation) -> None:
        if isinstance(original_node.operator, (cst.Add, cst.Modulo)):
            self._assembling -= 1

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> bool:
        self._check(node, self._assembling > 0)
        return False

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._check(node, self._assembling > 0)

    def visit_FormattedString(self, node: cst.FormattedString) -> bool:
        self._check(node, True)
        return False

    def _check(self, node: cst.BaseExpression, assembling: bool) -> None:
        if self._quiet or (self._statement is not None and self._reported_statement is self._statement):
            return
        text = literal_text(node)
        if not text or "{%" in text or "{{" in text:
            return  # a Jinja chat template is the right place for these tokens
        tokens = _chat_tokens(text)
        if not tokens or not self._in_scope():
            return
        if _only_tokens(text) and not assembling:
            return  # a token name on its own, not prompt text
        self._reported_statement = self._statement
        self.report(node, tokens=", ".join(dict.fromkeys(tokens)))

    def _in_scope(self) -> bool:
        """RL code outside tests; named (`--select RL307`), also a module outside tests that loads a language
        model's tokenizer or builds a generation engine (the prompt module a trainer imports says no RL on its
        own)."""
        purpose = self.file.fact(Purpose)
        if purpose.rl_source:
            return True
        tokenizers = self.file.fact(TokenizerFacts)
        return self.file.settings.names(self.code) and not purpose.is_test and bool(
            tokenizers.loads_tokenizer or tokenizers.tokenizers or tokenizers.engines)


class DoubleThinkPrefill(FunctionRule):
    """
    ## What it does
    Reports `"<think>"` appended to the text of
    `apply_chat_template(..., tokenize=False, add_generation_prompt=True)` without
    checking whether the rendered prompt already ends with it.

    ## Why is this bad?
    The chat templates of several reasoning models (Qwen3 with thinking on,
    DeepSeek-R1 distills) already end the generation prompt with `<think>\\n`. Appending
    another gives `<think>\\n<think>\\n`: the model sees a prompt unlike its training,
    and format rewards that expect one opening marker fail.

    ## Example
    ```python
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    prompt += "<think>\\n"
    ```

    ## Use instead
    ```python
    if not prompt.rstrip().endswith("<think>"):
        prompt += "<think>\\n"
    ```

    ## Options
    None.
    """

    code = "RL308"
    name = "double-think-prefill"
    severity = Severity.WARNING
    message = "`<think>` is appended to a generation prompt rendered by `{template}` without checking that the template did not already add it"
    triggers = ("<think>",)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Add) and _starts_think(node.right):
            self._check(node, node.left)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and _starts_think(node.value):
            self._check(node, node.target)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        parts = node.parts
        for first, second in zip(parts, parts[1:]):
            if isinstance(first, cst.FormattedStringExpression) and isinstance(second, cst.FormattedStringText) \
                    and second.value.lstrip().startswith("<think>"):
                self._check(node, first.expression)

    def _check(self, node: cst.CSTNode, base: cst.BaseExpression) -> None:
        scope = self.scope
        call = self.file.fact(TokenizerFacts).rendered(base, scope)
        if call is None:
            return
        generation = keyword(call, "add_generation_prompt")
        if generation is None or number(generation.value) != 1.0:
            return
        if any("<think>" in text for text in self.file.fact(MarkerChecks).checked(scope)):
            return
        self.report(node, template="apply_chat_template(..., add_generation_prompt=True)")


def _starts_think(node: cst.BaseExpression) -> bool:
    text = literal_text(node)
    return text is not None and text.lstrip().startswith("<think>")


class AnswerExtractionFallback(FunctionRule):
    """
    ## What it does
    Reports, in RL code and files of reward functions, answer extraction that
    returns the whole text when its marker is missing: `text.split("####")[-1]`,
    `rpartition("<answer>")[2]`, a `re.search` for the answer whose fallback is
    `return text` (or the whole text kept in a name, `answer = m.group(1) if m else text`),
    or a `find`/`rfind`/`index` of the marker whose miss returns the whole text, in a function that never checks that the marker is there (`in`);
    a slice that starts at an unchecked `find`/`rfind` of the marker
    (`text[text.find("<answer>") + 8 : text.find("</answer>")]`, or through a name
    bound to the position, never compared with -1 or 0), which starts a few
    characters into the text when the marker is missing;
    `text.split("<answer>")[1]`, which raises IndexError instead; and a fallback to
    the last number in the text (`re.findall(r"-?\\d+", text)[-1]`) in a function that
    looked for the marker first and that a reward function of the file runs. Reasoning end markers (`</think>`) are RL301's. The
    dataset's gold answer (`row["answer"]`, a column of them, or a helper's
    parameter that every call in the file gives one) is not a completion and is not
    reported, nor is the text after the first `Answer:` header of a
    "Question: ... Answer: ..." sequence.

    ## Why is this bad?
    A completion without the marker is then scored on everything it says: a model
    that lists several candidate numbers, or restates the question's numbers, is
    rewarded whenever the gold answer appears among them. The policy learns to omit
    the format and spray answers: reward hacking (verifiers #1028, prime-rl #475).
    A `find` that misses gives -1, so `text[text.find("<answer>") + 8:]` keeps all
    but the first seven characters.
    `split(marker)[1]` instead stops the run at the first completion without it.

    ## Example
    ```python
    def extract(completion: str) -> str:
        return completion.split("####")[-1].strip()

    def tagged(completion: str) -> str:
        return completion[completion.find("<answer>") + 8 : completion.find("</answer>")]
    ```

    ## Use instead
    ```python
    def extract(completion: str) -> str:
        if "####" not in completion:
            return ""
        return completion.split("####")[-1].strip()

    def tagged(completion: str) -> str:
        start = completion.find("<answer>")
        if start == -1:
            return ""
        return completion[start + 8 : completion.find("</answer>", start)]
    ```

    ## Options
    None.
    """

    code = "RL310"
    name = "answer-extraction-fallback"
    severity = Severity.WARNING
    tier = Tier.PEDANTIC  # primer precision 0.67 (4 real, 2 noise): deliberate lenient fallbacks beside strict scorers
    message = "{what}: a completion without the answer marker {consequence}"
    triggers = ("####", "answer", "boxed", "solution>", "Answer")

    def __init__(self, file) -> None:
        super().__init__(file)
        self._searches: Optional[bool] = None  # does the file search text with a regex at all?
        self._active: Optional[bool] = None

    def _is_active(self) -> bool:
        """RL code or a file of reward functions: a lenient extractor in an evaluation harness or a
        parsing utility rewards no policy."""
        if self._active is None:
            self._active = self.file.fact(Purpose).rl_code or self.file.fact(RewardFunctions).defines_any
        return self._active

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not may_extract(node) or not self._is_active():
            return
        found = extraction(node, self.file.fact(Scopes), self.scope)
        if found is None or found.kind not in ("split", "rsplit", "rpartition", "find", "rfind") or \
                not is_answer_marker(found.marker):
            return
        first = found.kind == "split" and found.index == 1
        if first and not any(c in found.marker for c in "<#\\"):
            return  # the text after the first `Answer:` of "Question: ... Answer: ...": a prompt's header, not a tag
        located = found.kind in ("find", "rfind")  # -1 when the marker is missing: the slice starts near the top
        text = node.value if located else found.node.value.func.value
        if self.file.fact(MarkerChecks).checks(self.scope, found.marker, positions=not located) or \
                self.file.fact(GoldAnswers).is_gold(text, self.scope):
            return
        if located:
            what = f"`{self.source(node)}` starts at `{found.kind}({found.marker!r})` without checking that it was found"
        else:
            what = f"`{self.source(node)}` keeps the text after {found.marker!r} without checking for it"
        self.report(node, what=what, consequence="raises IndexError" if first else
                    "is scored on (almost) its whole text" if located else "is scored on its whole text")

    def visit_Return(self, node: cst.Return) -> None:
        if self.function is None or not isinstance(node.value, (cst.IfExp, cst.Name, cst.Call, cst.Subscript)) or \
                not self._looks_for_answers():
            return
        value = node.value
        if not isinstance(value, cst.IfExp) and len(self.scope.returns) < 2:
            return
        self._fallback(node, [value.orelse, value.body] if isinstance(value, cst.IfExp) else [value])

    def visit_Assign(self, node: cst.Assign) -> None:
        """`answer = m.group(1) if m else text`: the same fallback, kept in a name the function then scores."""
        if self.function is not None and isinstance(node.value, cst.IfExp) and len(node.targets) == 1 and \
                isinstance(node.targets[0].target, cst.Name) and self._looks_for_answers():
            self._fallback(node.value, [node.value.orelse, node.value.body])

    def _looks_for_answers(self) -> bool:
        """The file searches text at all (a regex, a `find`), and is RL code or a file of reward functions."""
        if self._searches is None:
            self._searches = any(f".{name}(" in self.file.text for name in (
                "search", "match", "findall", "fullmatch", "find", "rfind", "index", "rindex"))
        return self._searches and self._is_active()

    def _fallback(self, node: cst.CSTNode, candidates: List[cst.BaseExpression]) -> None:
        """Report `node` when one of `candidates` (what it returns or keeps) is the whole text that an answer
        pattern or marker was looked for in, unchecked, or the last number of a text searched for a marker."""
        scope = self.scope
        lookups, checks, gold = self.file.fact(AnswerLookups), self.file.fact(MarkerChecks), self.file.fact(GoldAnswers)
        for candidate in candidates:
            last = lookups.last_number(candidate, scope)
            if last is not None and last in lookups.attempted(scope) and not gold.is_gold(cst.Name(last), scope) \
                    and self.file.fact(RewardFunctions).scores(self.function):
                self.report(node, what=f"`{self.source(node)}` falls back to the last number in the text",
                            consequence="is scored on whichever number it mentions last")
                return
            candidate = unwrap(candidate)
            if not isinstance(candidate, cst.Name) or gold.is_gold(candidate, scope):
                continue
            patterns = lookups.searched(scope).get(candidate.value, [])
            markers = lookups.located(scope).get(candidate.value, [])
            if patterns and not any(checks.checks(scope, pattern) for pattern in patterns):
                what = "falls back to the text the answer pattern searched"
            elif markers and self._cuts(candidate.value, scope) and not any(
                    checks.checks(scope, marker, positions=False) for marker in markers):
                what = "falls back to the whole text when the marker is not found"
            else:
                continue
            self.report(node, what=f"`{self.source(node)}` {what}", consequence="is scored on its whole text")
            return

    @staticmethod
    def _cuts(name: str, scope: Scope) -> bool:
        """Another return of the function gives a slice of `name`: the text at the position found."""
        return any(isinstance(n, cst.Subscript) and isinstance(n.value, cst.Name) and n.value.value == name
                   and any(isinstance(e.slice, cst.Slice) for e in n.slice)
                   for ret in scope.returns if ret.value is not None for n in walk(ret.value))


class PadEqualsEosMask(FunctionRule):
    """
    ## What it does
    Reports a loss mask that leaves out the EOS token the policy sampled, in either of two forms.

    A mask that excludes EOS explicitly: the sampled completion ids (a `generate` output, a
    slice of it, or it padded by `torch.cat` with a new tensor) compared unequal to the EOS id
    (`tokenizer.eos_token_id`, `model.config.eos_token_id`, `model.generation_config.eos_token_id`,
    or a name that holds one), by `!=` or `.ne()`, alone or and-ed (`&`, `*`) with other masks,
    reported at the comparison when the engine sees the mask multiply (or select, `terms[mask]`)
    per-token terms of the policy's log-probs (a per-token loss, a ratio) in a loss that takes a policy-gradient step,
    in this file or in a helper it calls. A mask used only for rewards, values, metrics, display
    or a forward's `attention_mask` is not reported, nor a mask over the prompt ids (not sampled),
    nor one built from the first EOS position (it keeps the EOS), nor one over the ids shifted one
    back (`seqs[:, n - 1:-1] != eos`: each is the token before an action, so only the positions after
    EOS are left out).

    A comparison of token ids with the pad id (`ids != tokenizer.pad_token_id`,
    `labels == pad_id`) in a file (not a test) that sets `tokenizer.pad_token = tokenizer.eos_token`
    (or `pad_token_id = eos_token_id`) unconditionally: a fallback taken only when the
    tokenizer has no pad token (`if tokenizer.pad_token is None`, `pad_token or eos_token`, `pad if pad is not None else eos`)
    may never run. A mask that is only given to a forward as `attention_mask=`, or put
    under that key of a batch (`{"attention_mask": ids.ne(pad)}`), is not reported:
    hiding EOS from attention changes nothing before it.

    ## Why is this bad?
    With padding equal to EOS, a mask built from the pad id also hides every real
    EOS token: the model is never trained to emit EOS, completions stop ending, and
    they all run to the length limit (trl #4970, #6357).

    ## Example
    ```python
    tokenizer.pad_token = tokenizer.eos_token
    completion_mask = (completion_ids != tokenizer.pad_token_id).long()
    ```
    ```python
    completion_ids = model.generate(prompt_ids, do_sample=True)[:, prompt_ids.size(1):]
    action_mask = (completion_ids != tokenizer.eos_token_id) & (completion_ids != pad_id)
    loss = (-logps * advantages[:, None] * action_mask).sum() / action_mask.sum()
    ```

    ## Use instead
    Build the mask from the first EOS position (keeping it) or from the lengths:
    ```python
    is_eos = completion_ids == tokenizer.eos_token_id
    first = torch.where(is_eos.any(1), is_eos.int().argmax(1), is_eos.size(1))
    completion_mask = (torch.arange(is_eos.size(1))[None] <= first[:, None]).long()
    ```
    or give the tokenizer a pad token of its own.

    ## Options
    None.
    """

    code = "RL311"
    name = "pad-equals-eos-mask"
    severity = Severity.WARNING
    message = "`{expr}` {what} and the model never learns to stop"
    triggers = ("pad_token", "eos_token_id")
    _PAD = "compares ids with the pad id, which is the EOS id here: the real EOS is masked too"
    _EOS = "leaves the sampled EOS out of the mask that weights the policy's loss: EOS gets no gradient"

    def __init__(self, file) -> None:
        super().__init__(file)
        self._targets = 0
        self._filters: Set[int] = set()
        self._attention = 0  # inside an `attention_mask=` argument
        self._assigns: List[cst.Assign] = []

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets += 1

    def leave_AssignTarget(self, original_node: cst.AssignTarget) -> None:
        self._targets -= 1

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self._targets:  # `ids[ids != pad]` read: dropping padding before decoding, not a mask
            self._filters.update(id(e.slice.value) for e in node.slice if isinstance(e.slice, cst.Index))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.Equal, cst.NotEqual)):
            return
        if id(node) in self._filters:
            return
        left, right = node.left, node.comparisons[0].comparator
        self._check(node, left, right)

    def visit_Call(self, node: cst.Call) -> None:
        if call_tail(node) in ("eq", "ne") and isinstance(node.func, cst.Attribute) and len(node.args) == 1:
            self._check(node, node.func.value, node.args[0].value)

    def visit_Arg(self, node: cst.Arg) -> None:
        self._attention += _attention_entry(node)

    def leave_Arg(self, original_node: cst.Arg) -> None:
        self._attention -= _attention_entry(original_node)

    def visit_DictElement(self, node: cst.DictElement) -> None:
        self._attention += _attention_entry(node)

    def leave_DictElement(self, original_node: cst.DictElement) -> None:
        self._attention -= _attention_entry(original_node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._assigns.append(node)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self._assigns.pop()

    def _check(self, node: cst.CSTNode, left: cst.BaseExpression, right: cst.BaseExpression) -> None:
        facts = self.file.fact(TokenizerFacts)
        if not facts.pad_is_eos or self._attention or self.file.fact(Purpose).is_test:
            return
        for ids, pad in ((left, right), (right, left)):
            read = self._pad_id_read(pad)
            if read is not None:
                if facts.pads_with_eos(dotted(read.value)) and not self._is_prompt(ids) and \
                        not self._handles_eos() and not self._attention_only():
                    self.report(node, expr=self.source(node), what=self._PAD)
                return

    def leave_Module(self, original_node: cst.Module) -> None:
        if "eos_token_id" not in self.file.text or self.file.fact(Purpose).is_test:
            return
        flow = self.file.fact(Flow)
        for comparison in flow.eos_excluded():
            if flow.owns(comparison):
                self.report(comparison, expr=self.source(comparison), what=self._EOS)

    def _attention_only(self) -> bool:
        """`attention_mask = (ids != pad).long()` only ever passed as `attention_mask=` to a forward: hiding EOS
        from attention changes nothing before it, and the positions after it are padding."""
        if not self._assigns or len(self._assigns[-1].targets) != 1:
            return False
        target = self._assigns[-1].targets[0].target
        if not isinstance(target, cst.Name):
            return False
        nodes = list(walk(self.scope.node))
        keywords = {id(a.keyword) for a in nodes if isinstance(a, cst.Arg) and a.keyword is not None}
        reads = [n for n in nodes if isinstance(n, cst.Name) and n.value == target.value and id(n) not in keywords]
        given = [a for a in nodes if isinstance(a, (cst.Arg, cst.DictElement)) and _attention_entry(a)
                 and isinstance(a.value, cst.Name) and a.value.value == target.value]
        return bool(given) and len(reads) == len(given) + 1  # the assignment's own target

    def _handles_eos(self) -> bool:
        """The function looks for EOS itself (`ids == eos_token_id`): it knows pad is EOS."""
        for node in walk(self.scope.node):
            if isinstance(node, cst.Attribute) and node.attr.value in ("eos_token_id", "eos_token_ids"):
                return True
            if isinstance(node, cst.Name) and "eos" in node.value.lower():
                return True
        return False

    def _pad_id_read(self, expr: cst.BaseExpression) -> Optional[cst.Attribute]:
        """The `holder.pad_token_id` that `expr` is, directly or through the one name it is assigned to."""
        if isinstance(expr, cst.Attribute):
            return expr if expr.attr.value == "pad_token_id" else None
        if isinstance(expr, cst.Name) and "pad" in expr.value.lower():
            for scope in (self.scope, self.file.fact(Scopes).module):
                values = scope.assigned.get(expr.value)
                if values:
                    return values[0] if len(values) == 1 and isinstance(values[0], cst.Attribute) \
                        and values[0].attr.value == "pad_token_id" else None
        return None

    def _is_prompt(self, expr: cst.BaseExpression) -> bool:
        """Prompt ids: their padding is on the left and holds no EOS to lose."""
        base = expr
        while isinstance(base, cst.Subscript) or (isinstance(base, cst.Call) and isinstance(base.func, cst.Attribute)):
            base = base.value if isinstance(base, cst.Subscript) else base.func.value
        name = dotted(base) or ""
        if any(w in words(name.replace(".", "_")) for w in ("prompt", "prompts", "query", "queries")):
            return True
        return self.file.fact(TextRoles).role(expr, self.scope) in (PROMPT, PROMPTS)


def _attention_entry(node) -> bool:
    """`attention_mask=...` given to a call, or `{"attention_mask": ...}`, the batch a forward unpacks."""
    if isinstance(node, cst.Arg):
        return node.keyword is not None and node.keyword.value == "attention_mask"
    return literal_text(node.key) == "attention_mask"


class DoubleBos(FunctionRule):
    """
    ## What it does
    Reports text rendered by `apply_chat_template(..., tokenize=False)` that is
    tokenized again with the default `add_special_tokens=True`: `tokenizer(text)`,
    `tokenizer.encode(text)`, or vLLM's `LLM.generate(prompts)` given the text (the
    engine tokenizes it with special tokens), where the file names its model (a hub id
    or a path in a literal, not a key that looks an entry up) and it is of a family
    whose tokenizer adds a BOS (Llama, Mistral, Gemma, DeepSeek). The text is
    followed through names, lists it is appended to and the file's own helpers; text
    whose BOS was stripped first (`text.removeprefix(tokenizer.bos_token)`,
    `text[len(bos):]`) keeps one. Files that name no model, models of
    several kinds, or models whose tokenizer adds none (Qwen, GPT-2) are not
    reported, nor are tests. Each rendered text is reported once, where it is first
    tokenized.

    ## Why is this bad?
    The rendered template already starts with the BOS token; tokenizing it with special
    tokens adds a second one (Llama, Gemma, Mistral tokenizers). The policy is trained
    and sampled on `<bos><bos>...` prompts, which it never saw in instruction tuning,
    and its log-probs shift.

    ## Example
    ```python
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, return_tensors="pt").input_ids
    ```

    ## Use instead
    ```python
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
    ```
    or `apply_chat_template(messages, tokenize=True, ...)`; with vLLM, `llm.chat(messages)`
    or token-id prompts.

    ## Options
    None.
    """

    code = "RL312"
    name = "double-bos"
    severity = Severity.WARNING
    message = "`{expr}` tokenizes a rendered chat template with add_special_tokens=True{how}: the prompt gets a second BOS"
    triggers = ("tokenize=False",)

    def __init__(self, file) -> None:
        super().__init__(file)
        self._rendered: Set[int] = set()  # renders already reported: one finding per cause

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.file.fact(TokenizerFacts)
        text = tokenized_text(node)
        if text is None:
            text = facts.engine_prompts(node)
        if text is None:
            return
        special = keyword(node, "add_special_tokens")
        if (special is not None and number(special.value) != 1.0) or any(a.star == "**" for a in node.args):
            return
        render = None if text is None else facts.rendered_with_bos(text, self.scope)
        if render is None or id(render) in self._rendered or not facts.adds_bos or self.file.fact(Purpose).is_test:
            return
        self._rendered.add(id(render))
        how = " (vLLM's `generate` tokenizes text prompts so)" if call_tail(node) == "generate" else ""
        self.report(node, expr=self.source(node), how=how)


def _tokenizer_like(expr: cst.BaseExpression) -> bool:
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
    lowered = name.lower()
    return "tokenizer" in lowered or lowered in ("tok", "processing_class", "processor")


def tokenized_text(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The text a tokenizer call turns into ids: `tokenizer(text)`, `tokenizer(text=...)`,
    `tokenizer.encode(text)` and its batch relatives; None for any other call."""
    if call_tail(call) in ("encode", "encode_plus", "batch_encode_plus"):
        if not isinstance(call.func, cst.Attribute) or not _tokenizer_like(call.func.value):
            return None
    elif not _tokenizer_like(call.func):
        return None
    text = keyword(call, "text")
    return text.value if text else positional(call, 0)


def _chat_template_ids(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The conversation of `tokenizer.apply_chat_template(conversation)` when it returns ids (`tokenize` left
    True). TRL's function of that name renders text."""
    if call_tail(call) != "apply_chat_template" or not isinstance(call.func, cst.Attribute):
        return None
    tokenize = keyword(call, "tokenize")
    if tokenize is not None and number(tokenize.value) != 1.0:
        return None
    conversation = keyword(call, "conversation")
    return conversation.value if conversation else positional(call, 0)


class DecodeReencodeTrainingIds(FunctionRule):
    """
    ## What it does
    Reports a tokenizer call (`tokenizer(texts)`, `tokenizer.encode(text)`,
    `apply_chat_template(messages)` returning ids) whose text comes from completions
    decoded with `skip_special_tokens=True`, when its ids become the input of the
    policy's forward in a policy-gradient loss (followed through names, containers,
    concatenation with the prompt and the file's own helpers; the loss may be computed
    by a method of another class or module of the project). Re-tokenizing for a
    reward model, a judge or a reference model is not reported.

    ## Why is this bad?
    Decoding with `skip_special_tokens=True` drops the EOS token, so the re-tokenized
    sequence has no EOS to train on: the model is never rewarded for stopping, and
    completions grow to the length limit. Text does not round-trip through a
    tokenizer either: the new ids can split words differently from the sampled ones,
    so the log-probs of the loss are those of sequences the policy never sampled
    (off-policy, and the importance ratio against the sampler's log-probs is wrong).

    ## Example
    ```python
    out = policy.generate(**enc, do_sample=True)
    texts = tokenizer.batch_decode(out[:, prompt_len:], skip_special_tokens=True)
    batch = tokenizer([p + t for p, t in zip(prompts, texts)], return_tensors="pt", padding=True)
    logps = policy(**batch).logits.log_softmax(-1)
    loss = -(token_logps(logps, batch.input_ids) * advantages[:, None]).mean()
    ```

    ## Use instead
    Train on the generated ids themselves (`out`, with its EOS), and decode only for
    the reward:
    ```python
    texts = tokenizer.batch_decode(out[:, prompt_len:], skip_special_tokens=True)
    logps = policy(out, attention_mask=(out != pad_id)).logits.log_softmax(-1)
    ```

    ## Options
    None.
    """

    code = "RL314"
    name = "decode-reencode-training-ids"
    severity = Severity.WARNING
    message = ("`{expr}` re-tokenizes completions decoded without special tokens, and `{forward}` trains on "
               "the result: EOS is gone and the ids are not the sampled ones")
    triggers = ("skip_special_tokens", "vllm")

    def visit_Call(self, node: cst.Call) -> None:
        text = tokenized_text(node)
        if text is None:
            text = _chat_template_ids(node)
        if text is None or self.file.fact(Purpose).is_test:
            return
        flow = self.file.fact(Flow)
        if self.file.fact(TokenizerFacts).decoded(text, self.scope) is None and \
                not flow.value(text).sources & flow.detokenized:
            return
        forward = self.file.fact(IdsUse).policy_forward(node, self.function)
        if forward is not None:
            self.report(node, expr=self.source(node), forward=self.source(forward.func, 40))


class PromptTruncatedRight(FunctionRule):
    """
    ## What it does
    Reports a generation prompt rendered by
    `apply_chat_template(..., add_generation_prompt=True)` (the same text, through
    names, attributes, returns, lists, `[prompt] * n` and helpers; or the template
    tokenizing it itself) that is tokenized with `truncation=True` and a `max_length`
    while that tokenizer object truncates on the right: its call's
    `truncation_side=`, else the side set where the tokenizer was loaded or
    configured, in this module or another (none set: transformers' right side),
    and whose ids reach a sampler (a model's `generate` the engine sees given this
    encoding, through a `DataLoader`'s collate function and methods of other modules;
    a vLLM engine or a verl worker group the file hands them to, known by how it was
    built; mlx_lm's `generate`). A `generate` or `sample` method of an object of unknown
    kind is not known to sample, and a tokenizer whose
    side is not known (given from out of sight, handed to a library that may set it),
    text made from the prompt (an f-string, a concatenation), and prompts the file
    filters by that length (`len(ids) <= max_length`) are not reported.

    ## Why is this bad?
    Right-side truncation keeps the start of the prompt and cuts its end: a long
    prompt loses the end of the question and the assistant header that the
    generation prompt added, so the model continues the user's text instead of
    answering, and its rollouts are scored against a question it never saw whole.

    ## Example
    ```python
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    enc = tokenizer(text, truncation=True, max_length=1024, return_tensors="pt")
    ```

    ## Use instead
    ```python
    tokenizer.truncation_side = "left"
    enc = tokenizer(text, truncation=True, max_length=1024, return_tensors="pt")
    ```
    or drop prompts longer than the limit before generation.

    ## Options
    None.
    """

    code = "RL315"
    name = "prompt-truncated-right"
    severity = Severity.WARNING
    message = ("`{expr}` truncates a generation prompt for `{sampler}` on the right: prompts past {limit} tokens "
               "lose the end of the question and the assistant header")
    triggers = ("truncation",)

    def visit_Call(self, node: cst.Call) -> None:
        truncation, limit = keyword(node, "truncation"), keyword(node, "max_length")
        if truncation is None or limit is None or not _truncates(truncation.value) or \
                self._side(node) != "right" or not self.file.fact(Purpose).rl_source:
            return  # prompt encoders are everywhere in ML code
        flow = self.file.fact(Flow)
        if not flow.encodes_generation_prompt(node) or self._filtered(limit.value):
            return
        sampler = self._sampler(node)
        if sampler is not None:
            self.report(node, expr=self.source(node), limit=self.source(limit.value, 30),
                        sampler=self.source(sampler.func, 40))

    def _side(self, call: cst.Call) -> Optional[str]:
        """The side the call truncates on: its own `truncation_side=`, else its tokenizer object's as the engine
        follows it to where it was loaded and configured (none set: the right, transformers' default)."""
        own = keyword(call, "truncation_side")
        if own is not None:
            return literal_text(own.value)
        side = self.file.fact(TokenizerFacts).object_side(call, TRUNCATION_SIDE)
        return "right" if side == DEFAULT_SIDE else side

    def _sampler(self, call: cst.Call) -> Optional[cst.Call]:
        """The `generate` of a model the engine sees given ids of this encoding (in this module or through the
        methods of others it follows); else a sampling method of an engine it knows as a sampler (a vLLM engine, a
        verl worker group's `generate_sequences`) that the ids are handed to in this file."""
        event = next((e for e in self.file.fact(Flow).generations if call in e.target.sources), None)
        if event is not None:
            return event.node
        return self.file.fact(IdsUse).generation(call, self.function)

    def _filtered(self, limit: cst.BaseExpression) -> bool:
        """The file compares something with the same limit (`len(ids) <= max_len`, `if n > WINDOW`): it
        measures prompts against it and drops or shortens the long ones."""
        code = self.file.module.code_for_node
        shown = code(limit)
        for comparison in self.file.fact(Scopes).comparisons():
            operands = [comparison.left] + [c.comparator for c in comparison.comparisons]
            if any(isinstance(c.operator, _ORDER) for c in comparison.comparisons) and any(
                    code(o) == shown for o in operands):
                return True
        return False


_ORDER = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


class GenerateRightPadded(FunctionRule):
    """
    ## What it does
    Reports a tokenizer call that pads a batch of prompts (`padding=True`,
    `"longest"`, `"max_length"`) on the right and whose ids reach `generate` of a
    decoder-only model (followed through names, `**enc`, containers and the file's
    own helpers; and, as the engine follows them, through the batches of a
    `DataLoader` whose collate function makes them and the methods of other modules
    they are handed to, when they are the only encoding the sampled prompt holds).
    The side is taken from the source: the call's `padding_side=`, the
    side the file sets on that tokenizer, or, when the file loads the tokenizer itself
    and sets no side but "right" on other tokenizers, the default of the models it
    names (Qwen, GPT-2, GPT-Neo, Pythia, SmolLM tokenizers pad on the right; Llama 2,
    Mistral, Gemma and DeepSeek ones on the left). A tokenizer the file is given counts
    as the engine follows it to where another module loads and configures it (the side
    set there, or none set). A tokenizer given from out of sight, or handed to code that
    may set its side, a side the code computes, a "left" it sets on a tokenizer under
    another name, a single prompt, encoder-decoder models (T5, BART) and vLLM / SGLang
    engines are not reported.

    ## Why is this bad?
    A decoder-only model continues the last token of each row. With right padding,
    every prompt shorter than the longest ends in pad tokens, so its completion is
    sampled after a run of padding the model never saw in training: rollouts of
    short prompts degrade, their log-probs are those of a different context, and the
    completion no longer starts at the prompt length that slicing assumes.
    transformers warns about it at run time ("right-padding was detected").

    ## Example
    ```python
    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct")
    enc = tokenizer(prompts, padding=True, return_tensors="pt")
    out = policy.generate(**enc, do_sample=True, max_new_tokens=1024)
    ```

    ## Use instead
    ```python
    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-1.5B-Instruct", padding_side="left")
    ```
    or `tokenizer.padding_side = "left"` before tokenizing generation prompts (and
    back to `"right"` for training batches if the loss code needs it).

    ## Options
    None.
    """

    code = "RL316"
    name = "generate-right-padded"
    severity = Severity.WARNING
    message = ("`{expr}` pads a batch of prompts on the right ({how}) and `{sampler}` generates from it: "
               "pad tokens sit between the shorter prompts and their completions")
    triggers = ("padding",)

    def visit_Call(self, node: cst.Call) -> None:
        padding = keyword(node, "padding")
        if padding is None or not _pads(padding.value):
            return
        facts = self.file.fact(TokenizerFacts)
        text = tokenized_text(node)
        if text is None and dotted(node.func) in facts.tokenizers:  # `tk = AutoTokenizer.from_pretrained(...)`
            text = keyword(node, "text").value if keyword(node, "text") else positional(node, 0)
        if text is None:
            return
        side, written = facts.padding_side(node)
        if side != "right" or not facts.decoder_only or not self.file.fact(Purpose).rl_source:
            return
        if literal_text(padding.value) != "max_length" and not facts.batched(text, self.scope):
            return  # one prompt: `padding=True` adds nothing
        event = self.file.fact(IdsUse).sampled(node)
        if event is None or event.extra["model"].facts.get("arch") == SEQ2SEQ:
            return  # no model's `generate` the engine sees given these ids (an engine such as vLLM pads nothing)
        how = '`padding_side="right"`' if written else \
            "the default of its tokenizer, loaded for the models this file names"
        self.report(node, expr=self.source(node), how=how, sampler=self.source(event.node.func, 40))


class DropoutInRollout(FunctionRule):
    """
    ## What it does
    Reports a rollout (`policy.generate(...)` of a model the engine knows an optimizer
    trains, whatever its name) or an old-log-prob pass (a forward of
    the policy under `torch.no_grad()`) that the policy reaches in train mode: a
    `policy.train()` comes before it with no `policy.eval()` in between, in the same
    function, on the next turn of a loop, through the file's helpers or at the calls
    of the function it is in; also a pass that a method of a wrapper class of another
    module runs on the policy it holds (`llm.generate(...)` sampling with `self.model`,
    where `llm.model.train()` was called and the class sets no mode itself); when the
    file shows that the model samples dropout in train mode: LoRA with `lora_dropout > 0`
    (also where another module builds the adapter, with the value the run's settings file
    gives it), a dropout probability above 0 where a model is built or configured, or a
    GPT-2 / OPT model. A model the file never
    sets to train mode (`from_pretrained` models start in eval mode), models with
    zero dropout, `disable_dropout`, and a call that hands the model to code outside
    the file in between are not reported. Each `train()` is reported once, at the
    first pass it reaches.

    ## Why is this bad?
    `torch.no_grad()` does not turn dropout off; only `eval()` does. Sampled in train
    mode, each rollout comes from a random sub-network, and old log-probs computed so
    are those of yet another one: the importance ratio of the update is noise even
    before the policy moves, and clipping acts on that noise.

    ## Example
    ```python
    model = get_peft_model(base, LoraConfig(r=16, lora_dropout=0.05))
    for batch in loader:
        with torch.no_grad():
            out = model.generate(**batch, do_sample=True)
            old_logps = token_logps(model, out)
        model.train()
        loss = grpo_loss(model, out, old_logps, advantages)
    ```

    ## Use instead
    ```python
    for batch in loader:
        model.eval()
        with torch.no_grad():
            out = model.generate(**batch, do_sample=True)
            old_logps = token_logps(model, out)
        model.train()
        ...
    ```

    ## Options
    None.
    """

    code = "RL317"
    name = "dropout-in-rollout"
    severity = Severity.WARNING
    message = ("`{expr}` {what} with `{model}` in train mode (`{train}` reaches it) while its dropout is active "
               "({why}): the behaviour policy is a random sub-network and the ratio is noise")
    triggers = (".train(",)

    def __init__(self, file) -> None:
        super().__init__(file)
        self._reported: Set[int] = set()  # `train()` calls already reported: one finding per cause
        self._passes: Optional[Dict[int, str]] = None

    def _trained_model(self, expr: cst.BaseExpression) -> bool:
        """A model the engine knows is trained: an optimizer receives its parameters (in this file, or in the
        caller's file that hands it over)."""
        flow = self.file.fact(Flow)
        held = flow.value(expr)
        return held.facts.get("type") == MODEL and bool(held.facts.get("trains") or flow.trained(held))

    def _old_logp_passes(self) -> Dict[int, str]:
        """Forwards of the policy under no_grad, with its adapter on (old log-probs) -> the model: a model the
        engine knows is trained, whatever its name."""
        if self._passes is None:
            self._passes = {id(f.node): f.model for f in self.file.fact(GradFlow).forwards
                            if f.role == POLICY and f.no_grad and not f.adapter_off and
                            self._trained_model(f.node.func)}
        return self._passes

    def visit_Call(self, node: cst.Call) -> None:
        if not self.file.fact(Dropout).active or not self.file.fact(Purpose).rl_source:
            return
        if call_tail(node) == "generate" and isinstance(node.func, cst.Attribute) and \
                self._trained_model(node.func.value):
            model, what = dotted(self.file.fact(ModelRoles).unwrap(node.func.value)) or "", "samples rollouts"
        elif id(node) in self._old_logp_passes():
            model, what = self._old_logp_passes()[id(node)], "computes old log-probs"
        elif self.file.fact(PolicyPasses).at(node) is not None:  # through the methods of a wrapper class
            model, what = self.file.fact(PolicyPasses).at(node)
        else:
            return
        modes = self.file.fact(ModelModes).at(node, model, self.function)
        trains = [s.node for s in modes if s.mode == TRAIN and s.node is not None and id(s.node) not in self._reported]
        if not trains:
            return
        train = min(trains, key=self.source)  # the same one on every run
        self._reported.update(id(s.node) for s in modes if s.mode == TRAIN)
        self.report(node, expr=self.source(node), what=what, model=model, train=self.source(train, 40),
                    why=self.file.fact(Dropout).why)


def _pads(value: cst.BaseExpression) -> bool:
    """`padding=True`, `"longest"`, `"max_length"` (or a `PaddingStrategy` of those)."""
    text = literal_text(value)
    if text is None and isinstance(value, cst.Attribute):
        text = value.attr.value.lower()
    return number(value) == 1.0 if text is None else text in ("longest", "max_length")




def _truncates(value: cst.BaseExpression) -> bool:
    """`truncation=True` or a strategy that cuts (`"longest_first"`, `"only_first"`)."""
    text = literal_text(value)
    return number(value) == 1.0 if text is None else text not in ("do_not_truncate", "")


# Calls that sample rollouts, or configure an RL trainer's sampling.
_GENERATION_WORDS = {"gen", "generation", "generate", "sampling", "sample", "rollout"}
_KWARGS_KEYWORDS = {"generation_kwargs", "gen_kwargs", "sampling_kwargs", "generate_kwargs"}


def generation_settings(value: cst.BaseExpression) -> Dict[str, Tuple[cst.BaseExpression, cst.CSTNode]]:
    """Keys of a generation-kwargs dict (`{"max_new_tokens": 256}` or `dict(max_new_tokens=256)`): key ->
    (value, node to report)."""
    found: Dict[str, Tuple[cst.BaseExpression, cst.CSTNode]] = {}
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                key = literal_text(element.key)
                if key is not None:
                    found[key] = (element.value, element)
    elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict":
        found = {a.keyword.value: (a.value, a) for a in value.args if a.keyword is not None}
    return found


def generation_kwargs(node: cst.CSTNode) -> Dict[str, Tuple[cst.BaseExpression, cst.CSTNode]]:
    """The settings of a generation-kwargs dict assigned to `gen_kwargs`-like names or passed as
    `generation_kwargs=`; empty for anything else."""
    if isinstance(node, cst.Assign) and any(
            isinstance(t.target, cst.Name) and set(words(t.target.value)) & _GENERATION_WORDS for t in node.targets):
        return generation_settings(node.value)
    if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value in _KWARGS_KEYWORDS:
        return generation_settings(node.value)
    return {}


class GenerationSuppressesEos(CSTRule):
    """
    ## What it does
    Reports rollout generation whose minimum length equals its maximum
    (`min_new_tokens == max_new_tokens`, `min_length == max_length`,
    `min_tokens == max_tokens`), or that drops the EOS token (`eos_token_id=None`,
    vLLM's `ignore_eos=True`), in RL code outside tests.

    ## Why is this bad?
    Every sample runs to the length limit: the model cannot end its answer, the
    completions fill up with repetitions after the answer, and length-dependent
    losses and rewards see only full-length sequences. The policy never gets a
    signal for stopping.

    ## Example
    ```python
    out = policy.generate(**enc, do_sample=True, max_new_tokens=1024, min_new_tokens=1024)
    ```

    ## Use instead
    ```python
    out = policy.generate(**enc, do_sample=True, max_new_tokens=1024,
                          eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    ```

    ## Options
    None.
    """

    code = "RL313"
    name = "generation-suppresses-eos"
    severity = Severity.WARNING
    tier = Tier.PEDANTIC  # on the primer: deliberate fixed-length sampling, cut at a stop token afterwards
    message = "{what}: every sample runs to the length limit and the model never learns to stop"
    triggers = ("min_new_tokens", "min_length", "min_tokens", "eos_token_id", "ignore_eos")

    def visit_Call(self, node: cst.Call) -> None:
        settings = {a.keyword.value: (a.value, a) for a in node.args if a.keyword is not None}
        self._check(settings, call_tail(node) in _SAMPLER_CALLS)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._check(generation_kwargs(node), True)

    def visit_Arg(self, node: cst.Arg) -> None:
        self._check(generation_kwargs(node), True)

    def _check(self, settings: Dict[str, Tuple[cst.BaseExpression, cst.CSTNode]], sampler: bool) -> None:
        if not settings or not self.file.fact(Purpose).rl_source:
            return
        for low, high in (("min_new_tokens", "max_new_tokens"), ("min_length", "max_length"),
                          ("min_tokens", "max_tokens")):
            if low in settings and high in settings and self._same(settings[low][0], settings[high][0]):
                self.report(settings[low][1], what=f"`{low}` equals `{high}`")
                return
        if not sampler:
            return
        if "eos_token_id" in settings:
            value, node = settings["eos_token_id"]
            if isinstance(value, cst.Name) and value.value == "None":
                self.report(node, what="`eos_token_id=None` drops the stop token")
        if "ignore_eos" in settings and number(settings["ignore_eos"][0]) == 1.0:
            self.report(settings["ignore_eos"][1], what="`ignore_eos=True` drops the stop token")

    def _same(self, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
        code = self.file.module.code_for_node
        if not isinstance(a, (cst.Integer, cst.Float)) and code(a) == code(b):
            return True
        values = self.file.fact(Values)
        first, second = values.of(a), values.of(b)
        return first is not None and second is not None and first.number == second.number
