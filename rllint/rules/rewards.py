"""RL4xx: reward functions (their return shape, value range, result lists, zips and error handling)."""
from __future__ import annotations

from typing import Callable, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from rllint.analysis.flow import IR
from rllint.analysis.gold import AnswerMatches, contains
from rllint.analysis.purpose import Purpose
from rllint.analysis.imports import Imports
from rllint.analysis.hparams import GROUP_SIZE_TRIGGERS, is_group_size
from rllint.analysis.rewards import REWARD_LIST_KEYWORDS, RewardFunctions
from rllint.analysis.syntax import children, dotted, keyword, walk
from rllint.analysis.text import (GEN_IDS, PROMPTS, TEXTS, Scope, call_tail, number,
                                  per_completion_name)
from rllint.analysis.text_roles import TextRoles
from rllint.analysis.values import Values
from rllint.diagnostic import Severity, Tier
from rllint.registry import CSTRule, Option
from rllint.rules.decoding import FunctionRule, is_display_call

MIN_BINARY_GROUP_SIZE = Option(
    "min-binary-group-size", int, 8,
    "RL402: the smallest group size (completions per prompt) at which a reward with only two "
    "values is not reported.",
)


# Every reward function has one of these in its name, signature or registration.
_REWARD_TRIGGERS = ("reward", "score", "completions", "solution_str")


class _RewardRule(FunctionRule):
    """A rule about the reward function it is in (the innermost function, or any around it)."""

    def in_reward(self, innermost_only: bool = True) -> Optional[cst.FunctionDef]:
        rewards = self.file.fact(RewardFunctions)
        functions = self._functions[-1:] if innermost_only else reversed(self._functions)
        for function in functions:
            if rewards.is_reward(function):
                return function
        return None


def _scalar(expr: cst.BaseExpression, imports: Imports, scope: Optional[Scope] = None, depth: int = 0) -> bool:
    """One number: a literal, `float(...)`, `sum(list)`, `max(scores)`, `x.item()`, `np.mean(x)`, arithmetic of
    them, and a local name every assignment of which is one (`avg = total / len(completions)`)."""
    if number(expr) is not None and not (isinstance(expr, cst.Name)):
        return True
    if isinstance(expr, cst.Name) and scope is not None and depth < 4:
        values = scope.assigned.get(expr.value, ())
        return bool(values) and expr.value not in scope.params and expr.value not in scope.iterated and \
            expr.value not in scope.unpacked and all(_scalar(v, imports, scope, depth + 1) for v in values)
    if isinstance(expr, cst.BinaryOperation):
        return _scalar(expr.left, imports, scope, depth) and _scalar(expr.right, imports, scope, depth)
    if isinstance(expr, cst.Call):
        tail = call_tail(expr)
        if isinstance(expr.func, cst.Name):
            if tail in ("float", "int", "len") and expr.args:
                return True
            if tail == "sum" and len(expr.args) == 1 and not isinstance(expr.args[0].value, cst.GeneratorExp):
                return True
            if tail in ("max", "min", "sum") and keyword(expr, "key") is None:
                return _of_numbers(expr, imports, scope, depth)
            return False
        if tail == "item" and not expr.args:
            return True
        if tail in ("mean", "sum") and not expr.args and isinstance(expr.func, cst.Attribute):
            return True  # `torch.tensor(scores).mean()`: a 0-d tensor
        qualified = imports.qualified(expr.func) or ""
        if qualified in ("numpy.mean", "numpy.sum", "numpy.average", "statistics.mean", "statistics.fmean",
                         "math.fsum") and keyword(expr, "axis") is None and len(expr.args) == 1:
            return True
    return False


def _of_numbers(call: cst.Call, imports: Imports, scope: Optional[Scope], depth: int) -> bool:
    """`max(scores)` of a list of numbers, `min(len(c) for c in completions)`, `sum(1.0 for c in cs if c)`,
    `max(0.0, total)`: builtin `max` / `min` / `sum` of numbers is one number (of lists or tensors it would not
    be, so the items must show numbers)."""
    args = [a.value for a in call.args if a.keyword is None and not a.star]
    if len(args) == 1:
        items = args[0]
        if isinstance(items, cst.Name) and scope is not None:
            built = scope.assigned.get(items.value, ())
            if len(built) != 1:
                return False
            items = built[0]
        if isinstance(items, (cst.ListComp, cst.GeneratorExp)):
            element = items.elt
            return _scalar(element, imports, scope, depth + 1) or isinstance(element, cst.Comparison)
        return False
    return call_tail(call) != "sum" and len(args) >= 2 and all(_scalar(a, imports, scope, depth + 1) for a in args)


class RewardReturnsScalar(_RewardRule):
    """
    ## What it does
    Reports a reward function that receives a batch (TRL's `completions` with
    `**kwargs`, or a `*reward*` function taking `completions`, `responses`, `batch`...)
    and returns one number: `return 1.0`, `return sum(scores) / len(scores)`,
    `return float(...)`, `return x.mean().item()`, `return max(scores)`, a local name
    every assignment of which is one number, or anything from a function annotated
    `-> float` / `-> int`.

    ## Why is this bad?
    The trainer needs one reward per completion. A single number is broadcast to (or
    fails against) the whole batch: every completion gets the same reward, all
    advantages are zero, and nothing is learned, often without an error.

    ## Example
    ```python
    def format_reward(completions, **kwargs):
        scores = [1.0 if FORMAT.match(c) else 0.0 for c in completions]
        return sum(scores) / len(scores)
    ```

    ## Use instead
    ```python
    def format_reward(completions, **kwargs):
        return [1.0 if FORMAT.match(c) else 0.0 for c in completions]
    ```
    Functions that score one completion (`def reward(completion: str) -> float`) are
    not reported.

    ## Options
    None.
    """

    code = "RL401"
    name = "reward-returns-scalar"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "`{function}` receives a batch of completions but returns one number (`{expr}`): every completion gets the same reward"
    triggers = _REWARD_TRIGGERS

    def visit_Return(self, node: cst.Return) -> None:
        function = self.in_reward()
        if function is None or node.value is None or not self.file.fact(RewardFunctions).takes_batch(function):
            return
        if _scalar(node.value, self.file.fact(Imports), self.scope) or (
                _declares_number(function) and not any(_collection(r.value, self.scope) for r in self.scope.returns)):
            self.report(node, function=function.name.value, expr=self.source(node.value))


_COLLECTIONS = (cst.List, cst.ListComp, cst.Tuple, cst.GeneratorExp, cst.Dict, cst.DictComp)


def _collection(value: Optional[cst.BaseExpression], scope: Scope) -> bool:
    """A list built in sight: a literal or comprehension, `[0.0] * n`, a name assigned one. Where a function
    returns one, its `-> float` annotation is wrong, not its value (open-r1's `len_reward`)."""
    if isinstance(value, cst.BinaryOperation):
        return _collection(value.left, scope) or _collection(value.right, scope)
    if isinstance(value, cst.Name):
        return any(isinstance(v, _COLLECTIONS) for v in scope.assigned.get(value.value, ()))
    return isinstance(value, _COLLECTIONS)


def _declares_number(function: cst.FunctionDef) -> bool:
    """`def f(completions, **kwargs) -> float`: the function says itself that it returns one number."""
    returns = function.returns.annotation if function.returns is not None else None
    return isinstance(returns, cst.Name) and returns.value in ("float", "int")




class BinaryRewardSmallGroup(_RewardRule):
    """
    ## What it does
    Reports a reward function that only ever returns two distinct values (0/1,
    True/False, -1/1, 2.0/0.0, a comparison, a string test such as `text.isdigit()`, or
    `and` / `or` of them) in a file whose group size (`num_generations`,
    `group_size`, `n_samples_per_prompt`, `num_samples`, vLLM's `n`) is below
    `min-binary-group-size`. A function whose score is added to another one
    (`format_reward + accuracy_reward`) is not reported: the reward is shaped.
    Nor is a group size of 1 taken as the group's: one sample per call says
    nothing about how many completions a prompt gets, nor the default of a field
    or parameter whose class the file never builds or whose function it never
    calls (its use is out of sight).

    ## Why is this bad?
    Group-relative advantages are zero when every completion of a prompt gets the
    same reward. With a pass/fail reward and few samples per prompt, most groups are
    all-pass or all-fail (with 4 samples at 50% accuracy, one group in eight; at 10%
    or 90%, two in three): most of the batch gives no gradient.

    ## Example
    ```python
    config = GRPOConfig(output_dir="out", num_generations=4)

    def accuracy_reward(completions, solution, **kwargs):
        return [1.0 if extract(c) == s else 0.0 for c, s in zip(completions, solution, strict=True)]
    ```

    ## Use instead
    Sample more completions per prompt (8 to 16), or add partial credit (a shaped
    format reward, a graded score) so that groups differ.

    ## Options
    - `min-binary-group-size` (default 8): the smallest group size that is not reported.
    """

    code = "RL402"
    name = "binary-reward-small-group"
    severity = Severity.WARNING
    message = "`{function}` only returns {values}, and the group size is {group} ({origin}): most groups get identical rewards and zero advantage"
    options = (MIN_BINARY_GROUP_SIZE,)
    triggers = GROUP_SIZE_TRIGGERS + ("samplingparams",)
    triggers_ignore_case = True

    def __init__(self, file) -> None:
        super().__init__(file)
        self._group: Optional[Tuple[object, ...]] = None

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        rewards = self.file.fact(RewardFunctions)
        if not rewards.is_reward(node):
            return
        values = rewards.values(node)
        if values is None or len(values) != 2 or rewards.summed(node):
            return
        group = self._group_size()
        if group is None or group.number >= self.option(MIN_BINARY_GROUP_SIZE):
            return
        shown = " and ".join(_format(v) for v in sorted(values, reverse=True))
        origin = "set in this file" if group.origin == "literal" else group.origin
        self.report(node.name, function=node.name.value, values=shown, group=int(group.number), origin=origin)

    def _group_size(self):
        """The largest group size the file sets (small evaluation counts do not lower it)."""
        if self._group is None:
            values = self.file.fact(Values)
            built = self.file.fact(IR).module.calls_named
            # A field's or a parameter's default is a run's value where the file builds the class or calls the
            # function; one only declared here (built or called elsewhere, or never) is of unknown use.
            found = [values.value_of(d) for d in values.declarations() if is_group_size(d.name, d.owner)
                     and (d.kind not in ("field", "parameter") or built.get(d.owner))]
            for node in walk(self.file.module, into_functions=True):
                if isinstance(node, cst.Call):
                    for arg in node.args:
                        if arg.keyword is not None and (is_group_size(arg.keyword.value, call_tail(node)) or (
                                arg.keyword.value == "n" and call_tail(node) == "SamplingParams")):
                            found.append(values.of(arg.value))
            # A group of one has no group baseline at all (RL604's finding), and `SamplingParams(n=1)` in a loop
            # draws a group one completion at a time: only sizes of 2 and more say how large a group is.
            sizes = [v for v in found if v is not None and not isinstance(v.number, bool) and v.number >= 2]
            self._group = (max(sizes, key=lambda v: v.number),) if sizes else (None,)
        return self._group[0]


def _format(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


# ---------------------------------------------------------------- RL403: one append per completion

State = Tuple[int, Optional[cst.CSTNode]]  # appends so far (capped at 2), the node to blame


def _statements(body) -> Sequence[cst.CSTNode]:
    """The statements of a suite; a one-line suite (`except ValueError: out.append(0.0)`) is one statement."""
    if isinstance(body, cst.SimpleStatementSuite):
        return [body]
    return body.body if isinstance(body, cst.BaseSuite) else getattr(body, "body", body)


class _Unknown(Exception):
    """The loop body does something the path count does not model (a nested loop that appends)."""


class _Paths:
    """Counts appends to one list along every path through a loop body. `repeats(loop)` says whether an inner
    loop that appends runs once per item of something other than the completions (then every pass can append)."""

    def __init__(self, target: str, repeats: Callable[[cst.For], bool], body: cst.BaseSuite) -> None:
        self.target = target
        self.repeats = repeats
        self.flags = self._flags(body)

    def _blocks(self, node: cst.CSTNode) -> List[Sequence[cst.CSTNode]]:
        """The statement lists of `node` and of the blocks in it (not of nested functions or classes)."""
        found, stack = [], [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.BaseSuite):
                found.append(_statements(current))
            if current is node or not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                stack.extend(children(current))
        return found

    def _flags(self, body: cst.BaseSuite) -> Set[str]:
        """Names that say whether this iteration has appended: set to False (where no append has happened yet,
        which `statement` checks), then set only to True and each time beside an append, beside every later
        append not under `if not name:`, and tested only later in the block that set it to False
        (`matched = False` ... `append(r); matched = True` ... `if not matched: append(0)`)."""
        flags = set()
        for block in self._blocks(body):
            for index, statement in enumerate(block):
                name = _assigned_literal(statement, False)
                if name is None:
                    continue
                later = block[index + 1:]
                tests = [n for n in walk(body) if isinstance(n, cst.If) and _flag_test(n.test)[0] == name]
                if tests and all(any(t is s for s in later) for t in tests) and \
                        self._sets_beside_appends(body, later, name):
                    flags.add(name)
        return flags

    def _sets_beside_appends(self, body: cst.CSTNode, later: Sequence[cst.CSTNode], name: str) -> bool:
        for block in self._blocks(body):
            if any(_assigns(s, name) and _assigned_literal(s, True) != name and _assigned_literal(s, False) != name
                   for s in block):
                return False  # `matched = score > 0`: not a record of the append
            if any(_assigned_literal(s, True) == name for s in block) and not self._appends_here(block):
                return False
        for statement in later:
            if isinstance(statement, cst.If) and _flag_test(statement.test)[0] == name:
                continue
            blocks = self._blocks(statement) + ([[statement]] if isinstance(statement, cst.SimpleStatementLine) else [])
            for block in blocks:
                if self._appends_here(block) and not any(_assigned_literal(s, True) == name for s in block):
                    return False
        return True

    def _appends_here(self, block: Sequence[cst.CSTNode]) -> bool:
        return any(isinstance(s, cst.SimpleStatementLine) and any(self.is_append(x) for x in s.body) for s in block)

    def breaks_after_append(self, loop: cst.For) -> bool:
        """Every append in the loop's body is followed by a `break` in its own block: the loop appends at most once."""
        appends = 0
        for block in self._blocks(loop.body):
            for index, statement in enumerate(block):
                if isinstance(statement, cst.SimpleStatementLine) and any(self.is_append(s) for s in statement.body):
                    appends += 1
                    if not any(isinstance(later, cst.SimpleStatementLine) and any(
                            isinstance(s, cst.Break) for s in later.body) for later in block[index + 1:]):
                        return False
        return appends == len(self.appends_in(loop.body))

    def is_append(self, node: cst.CSTNode) -> bool:
        return (isinstance(node, cst.Expr) and isinstance(node.value, cst.Call)
                and isinstance(node.value.func, cst.Attribute) and node.value.func.attr.value == "append"
                and isinstance(node.value.func.value, cst.Name) and node.value.func.value.value == self.target)

    def appends_in(self, node: cst.CSTNode) -> List[cst.CSTNode]:
        return [n for n in walk(node) if self.is_append(n)]

    def block(self, body, states: FrozenSet[State]) -> Tuple[Set[State], Set[State]]:
        """(states reaching the end of `body`, states leaving the iteration by `continue`)."""
        statements = _statements(body)
        normal, continued = set(states), set()
        for statement in statements:
            normal, more = self.statement(statement, frozenset(normal))
            continued |= more
        return normal, continued

    def statement(self, node: cst.CSTNode, states: FrozenSet[State]) -> Tuple[Set[State], Set[State]]:
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            normal, continued = set(states), set()
            for small in node.body:
                if self.is_append(small):
                    normal = {_appended(c, blame, small) for c, blame in normal}
                elif isinstance(small, cst.Continue):
                    continued |= {(c, blame if blame is not None or c == 1 else small) for c, blame in normal}
                    normal = set()
                elif isinstance(small, (cst.Break, cst.Return, cst.Raise)):
                    normal = set()
            if _assigned_literal(node, False) in self.flags and any(c for c, _ in normal):
                raise _Unknown  # the flag no longer says whether this iteration appended
            return normal, continued
        if isinstance(node, cst.If):
            flag, negated = _flag_test(node.test)
            if flag in self.flags:  # `if not matched:` runs where this iteration has appended nothing
                first = frozenset(s for s in states if (s[0] == 0) == negated)
                second = frozenset(s for s in states if (s[0] == 0) != negated)
                normal, continued = self.block(node.body, first) if first else (set(), set())
                if node.orelse is not None and second:
                    more, more_continued = self.statement(node.orelse, second)
                    return normal | more, continued | more_continued
                return normal | set(second), continued
            return self.branches(node.body, node.orelse, states)
        if isinstance(node, cst.Else):
            return self.block(node.body, states)
        if isinstance(node, cst.Try):
            return self.try_(node, states)
        if isinstance(node, cst.With):
            return self.block(node.body, states)
        if isinstance(node, (cst.For, cst.While)):
            if not self.appends_in(node):
                return set(states), set()
            if isinstance(node, cst.For) and not _leaves_early(node.body) and self.repeats(node):
                return set(states) | {(2, node)}, set()  # no pass, or one append per pass
            if isinstance(node, cst.For) and not node.orelse and self.breaks_after_append(node):
                first = self.appends_in(node.body)[0]
                return set(states) | {_appended(c, blame, first) for c, blame in states}, set()  # none, or one
            raise _Unknown
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return set(states), set()
        if self.appends_in(node):
            raise _Unknown
        return set(states), set()

    def branches(self, body, orelse, states: FrozenSet[State]) -> Tuple[Set[State], Set[State]]:
        normal, continued = set(), set()
        body_appends = self.appends_in(body)
        else_appends = self.appends_in(orelse) if orelse is not None else []
        for state in states:
            body_normal, body_continued = self.block(body, frozenset([state]))
            if orelse is None:
                else_normal, else_continued = {state}, set()
            elif isinstance(orelse, cst.If):
                else_normal, else_continued = self.statement(orelse, frozenset([state]))
            else:
                else_normal, else_continued = self.block(orelse.body, frozenset([state]))
            normal |= self._blame(body_normal, state, else_appends) | self._blame(else_normal, state, body_appends)
            continued |= self._blame(body_continued, state, else_appends) | self._blame(else_continued, state,
                                                                                        body_appends)
        return normal, continued

    @staticmethod
    def _blame(results: Set[State], before: State, other: List[cst.CSTNode]) -> Set[State]:
        """A path that appended nothing while the other branch appends: blame that append."""
        if not other:
            return results
        return {(c, other[0] if blame is None and c == before[0] and c != 1 else blame) for c, blame in results}

    def try_(self, node: cst.Try, states: FrozenSet[State]) -> Tuple[Set[State], Set[State]]:
        raising: Set[State] = set()
        normal, continued = set(states), set()
        for statement in _statements(node.body):
            raising |= normal  # an exception before this statement completes
            normal, more = self.statement(statement, frozenset(normal))
            continued |= more
        for handler in node.handlers:
            handled, more = self.block(handler.body, frozenset(raising))
            normal |= handled
            continued |= more
        if node.orelse is not None:
            normal, more = self.block(node.orelse.body, frozenset(normal))
            continued |= more
        if node.finalbody is not None:
            normal, more = self.block(node.finalbody.body, frozenset(normal))
            continued, more_continued = self.block(node.finalbody.body, frozenset(continued))
            continued |= more | more_continued
        return normal, continued


def _appended(count: int, blame: Optional[cst.CSTNode], append: cst.CSTNode) -> State:
    """The state after one more append: a first append clears the blame of a branch that appended nothing (this
    path does append), a second is itself to blame unless an earlier cause is."""
    if count == 0:
        return 1, None
    return 2, blame if blame is not None else append


def _assigns(statement: cst.CSTNode, name: str) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and any(
            isinstance(n, cst.Name) and n.value == name for n in walk(
                small.targets[0].target if isinstance(small, cst.Assign) else small.target))
        for small in statement.body)


def _assigned_literal(statement: cst.CSTNode, value: bool) -> Optional[str]:
    """`name = True` (or False) as a whole statement line: the name."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                and isinstance(small.value, cst.Name) and small.value.value == str(value):
            return small.targets[0].target.value
    return None


def _flag_test(test: cst.BaseExpression) -> Tuple[Optional[str], bool]:
    """`if not name:` -> (name, True); `if name:` -> (name, False)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(
            test.expression, cst.Name):
        return test.expression.value, True
    return (test.value, False) if isinstance(test, cst.Name) else (None, False)


def _leaves_early(body: cst.CSTNode) -> bool:
    """A `break`, `return` or `raise` in a loop body (not in a loop or function nested in it)."""
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Break, cst.Return, cst.Raise)):
            return True
        if node is body or not isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(children(node))
    return False


class RewardListMisaligned(_RewardRule):
    """
    ## What it does
    Reports a reward function whose loop over the completions appends to the result
    list twice, or not at all, on some path of one iteration: an `append` in both the
    `try` (followed by more code that can raise) and the `except`, a `continue` before
    the `append`, an `append` only inside an `if`, an `append` inside an inner loop (over
    lines, steps or keywords of one completion) that has no `break`. A reward function is
    one by its signature and use (registered as one, or taking completions), not by a
    `*reward*` name alone. Inner loops over the completions of a group, over the messages
    of one conversational completion, and comprehensions are not reported.

    ## Why is this bad?
    The trainer pairs the i-th reward with the i-th completion. One missing or extra
    entry shifts every later reward onto the wrong completion (NeMo-RL #3635), or
    makes the list the wrong length, which some trainers pad or truncate silently.

    ## Example
    ```python
    def math_reward(completions, solution, **kwargs):
        rewards = []
        for completion, gold in zip(completions, solution, strict=True):
            if extract(completion) == gold:
                rewards.append(1.0)
        return rewards
    ```

    ## Use instead
    ```python
    def math_reward(completions, solution, **kwargs):
        rewards = []
        for completion, gold in zip(completions, solution, strict=True):
            rewards.append(1.0 if extract(completion) == gold else 0.0)
        return rewards
    ```

    ## Options
    None.
    """

    code = "RL403"
    name = "reward-list-misaligned"
    severity = Severity.ERROR
    tier = Tier.CORRECTNESS
    message = "{what} in `{function}`: {consequence}, and the rewards after it shift onto the wrong completions"
    triggers = _REWARD_TRIGGERS

    def __init__(self, file) -> None:
        super().__init__(file)
        self._loops: List[Tuple[int, cst.For]] = []  # enclosing loops, with the depth of their function

    def leave_For(self, original_node: cst.For) -> None:
        self._loops.pop()

    def visit_For(self, node: cst.For) -> None:
        outer = [loop for depth, loop in self._loops if depth == len(self._functions)]
        self._loops.append((len(self._functions), node))
        function = self.in_reward()
        if function is None or not isinstance(node.target, (cst.Name, cst.Tuple)) \
                or not self.file.fact(RewardFunctions).takes_completions(function):
            return
        scope = self.scope
        if not self._per_completion(node.iter, scope) or any(self._over_completions(o.iter, scope) for o in outer):
            return  # a loop inside the loop over the completions is judged as part of it
        returned = {r.value.value for r in scope.returns if isinstance(r.value, cst.Name)}
        over_completions = self._over_completions(node.iter, scope)
        for target in sorted(returned):
            built = scope.assigned.get(target, [])
            if not any(isinstance(v, cst.List) and not v.elements for v in built):
                continue
            paths = _Paths(target, lambda inner: over_completions and self._repeats(inner, node, scope), node.body)
            if not paths.appends_in(node.body):
                continue
            try:
                normal, continued = paths.block(node.body, frozenset([(0, None)]))
            except _Unknown:
                continue
            order = {id(n): i for i, n in enumerate(walk(node.body))}  # the first cause in the source
            for count, blame in sorted(normal | continued, key=lambda s: (s[0], order.get(id(s[1]), -1))):
                if count != 1 and blame is not None:
                    self._report(blame, count, function, paths)
                    return

    def _report(self, blame: cst.CSTNode, count: int, function: cst.FunctionDef, paths: _Paths) -> None:
        if isinstance(blame, cst.For):
            loop = f"for {self.source(blame.target, 30)} in {self.source(blame.iter, 30)}"
            what = f"an append inside the inner loop `{loop}` with no `break`"
            consequence = "one completion can add several rewards (or none)"
            blame = paths.appends_in(blame.body)[0]
        elif isinstance(blame, cst.Continue):
            what, consequence = "`continue` skips the append", "that completion gets no reward"
        elif count >= 2:
            what, consequence = "a second append for the same completion", "one completion gets two rewards"
        else:
            what, consequence = "the only append is conditional", "completions that fail the condition get no reward"
        self.report(blame, what=what, function=function.name.value, consequence=consequence)

    def _over_completions(self, iterable: cst.BaseExpression, scope: Scope) -> bool:
        """The loop runs over the completions themselves (their text or generated ids), not over prompts or groups."""
        roles = self.file.fact(TextRoles)
        return any(isinstance(n, cst.Name) and roles.role(n, scope) in (TEXTS, GEN_IDS) for n in walk(iterable))

    def _repeats(self, inner: cst.For, outer: cst.For, scope: Scope) -> bool:
        """An inner loop over something other than the completions, and other than the completion itself (the
        messages of one conversational completion)."""
        targets = {n.value for n in walk(outer.target) if isinstance(n, cst.Name)}
        if isinstance(inner.iter, cst.Name) and inner.iter.value in targets:
            return False
        return not self._over_completions(inner.iter, scope)

    def _per_completion(self, iterable: cst.BaseExpression, scope: Scope) -> bool:
        roles = self.file.fact(TextRoles)
        for node in walk(iterable):
            if isinstance(node, cst.Name) and (node.value in scope.params or roles.role(node, scope) in (
                    TEXTS, PROMPTS, GEN_IDS)):
                return True
        return False


class UncheckedParallelZip(_RewardRule):
    """
    ## What it does
    Reports, in RL code, `zip` over the per-completion lists (completions, prompts,
    answers, rewards, reward functions and their weights, and the dataset columns a
    reward function receives) without `strict=True`. An explicit `strict=False` is a
    choice and is not reported, and neither are reward functions zipped with their
    processing classes (one tokenizer per function, built from the functions).
    Pedantic: on real repositories these lists are nearly always equal in length by
    construction (a trainer passes the completions and the dataset columns of one
    batch), so `strict=True` is hygiene rather than a fix.

    ## Why is this bad?
    `zip` stops at the shortest list. When one list is shorter (a reward function that
    skipped a completion, a dataset column with missing rows, a reward weight list
    that does not match the functions), the extra items are dropped silently and the
    rest are paired with the wrong partners (trl #2839).

    ## Example
    ```python
    for completion, gold in zip(completions, answer):
        rewards.append(1.0 if gold in completion else 0.0)
    ```

    ## Use instead
    ```python
    for completion, gold in zip(completions, answer, strict=True):
        rewards.append(1.0 if gold in completion else 0.0)
    ```

    ## Options
    None. Off by default; turn it on with `extend-select = ["RL404"]`. `strict=` needs
    Python 3.10 or later: projects whose target Python is older are not told to use it. The
    target is `target-version` (`--target-version py39`), else what the nearest `pyproject.toml`
    says in `requires-python` (or Poetry's `python` dependency), else the Python running rllint.
    """

    code = "RL404"
    name = "unchecked-parallel-zip"
    severity = Severity.WARNING
    tier = Tier.PEDANTIC
    message = "`zip({args})` over per-completion lists without strict=True: a length mismatch silently drops completions"
    triggers = ("zip(",)

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Name) and node.func.value == "zip") or len(node.args) < 2:
            return
        if keyword(node, "strict") is not None or any(a.star for a in node.args):
            return
        if self.file.settings.target_python() < (3, 10):
            return
        if not (self.file.fact(Purpose).rl_code or self.file.fact(RewardFunctions).defines_any):
            return
        scope = self.scope
        reward = self.in_reward()
        kinds = [self._kind(arg.value, scope, reward) for arg in node.args]
        if all(kinds) and "named" in kinds:
            self.report(node, args=", ".join(self.source(a.value, 20) for a in node.args))

    def _kind(self, expr: cst.BaseExpression, scope: Scope, reward: Optional[cst.FunctionDef]) -> Optional[str]:
        """"named": a per-completion list by its name or role; "column": a list a reward function
        receives or builds from one; None: something else."""
        name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else None
        if name is None:
            return None
        if per_completion_name(name) or self.file.fact(TextRoles).role(expr, scope) == TEXTS:
            return "named"
        if reward is not None and isinstance(expr, cst.Name):
            if name in scope.params:
                return "column"
            for value in scope.assigned.get(name, ()):
                if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
                    iterables = [n for n in walk(value) if isinstance(n, cst.CompFor)]
                    if iterables and all(self._kind(f.iter, scope, reward) for f in iterables
                                         if isinstance(f.iter, (cst.Name, cst.Attribute))):
                        return "column"
        return None


class RewardSwallowsErrors(_RewardRule):
    """
    ## What it does
    Reports, in a reward function, an `except` clause that is bare or catches
    `Exception` / `BaseException` and returns or appends a constant score without
    logging or re-raising. A reward term counts as one by its use, whatever its
    name: a function whose result a reward function (of its file, or of a project
    file that imports it) adds into its score, appends or returns
    (`total = format_check(c) + feedback(c)`). Pedantic: in real reward functions the broad handler
    mostly wraps the parsing of the model's output, where "unparseable scores 0" is
    the intended behaviour.

    ## Why is this bad?
    A bug in the parser, the sandbox or the grader then looks exactly like a wrong
    answer: the run trains on rewards of 0 for every completion the bug touches, and
    nothing in the logs says so (RLVE #4).

    ## Example
    ```python
    def json_reward(completion: str) -> float:
        try:
            return score(json.loads(completion))
        except Exception:
            return 0.0
    ```

    ## Use instead
    ```python
    def json_reward(completion: str) -> float:
        try:
            payload = json.loads(completion)
        except json.JSONDecodeError:
            return 0.0
        return score(payload)
    ```
    or log the exception (`logger.exception(...)`) before returning the constant.

    ## Options
    None. Off by default; turn it on with `extend-select = ["RL405"]`.
    """

    code = "RL405"
    name = "reward-swallows-errors"
    severity = Severity.WARNING
    tier = Tier.PEDANTIC
    message = "`except{caught}` in `{function}` turns every error into the reward {value} without logging it"
    triggers = ("except",)  # a reward term is one by use, in a file that need not say "reward"

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        caught = _broad(node.type)
        if caught is None or not self._functions:
            return
        value = None
        for inner in walk(node.body):
            if isinstance(inner, cst.Raise) or (isinstance(inner, cst.Call) and _logs(inner)):
                return
            if isinstance(inner, cst.Return) and inner.value is not None and number(inner.value) is not None \
                    and not isinstance(inner.value, cst.Name):
                value = number(inner.value)
            if isinstance(inner, cst.Call) and call_tail(inner) == "append" and len(inner.args) == 1 \
                    and number(inner.args[0].value) is not None and not isinstance(inner.args[0].value, cst.Name):
                value = number(inner.args[0].value)
        if value is None:
            return
        rewards = self.file.fact(RewardFunctions)
        function = self.in_reward(innermost_only=False) or next(
            (f for f in reversed(self._functions) if rewards.reward_term(f)), None)
        if function is not None:
            self.report(node, caught=caught, function=function.name.value, value=_format(value))


def _broad(kind: Optional[cst.BaseExpression]) -> Optional[str]:
    if kind is None:
        return ":"  # bare
    names = [kind] if not isinstance(kind, cst.Tuple) else [e.value for e in kind.elements]
    for name in names:
        spelled = name.attr.value if isinstance(name, cst.Attribute) else name.value if isinstance(name, cst.Name) else ""
        if spelled in ("Exception", "BaseException"):
            return " " + spelled
    return None


def _logs(call: cst.Call) -> bool:
    if is_display_call(call):
        return True
    func = call.func
    while isinstance(func, cst.Attribute):
        func = func.value
    base = func.value.lower() if isinstance(func, cst.Name) else ""
    return any(w in base for w in ("log", "warnings", "traceback", "wandb", "sentry"))


class DuplicateRewardFunction(CSTRule):
    """
    ## What it does
    Reports a reward function listed twice in a trainer's `reward_funcs` (the list written
    in the call or held in a name assigned once), and a call of a reward function added twice,
    with the same arguments, into one summed reward (`fmt(c) + acc(c) + fmt(c)`).

    Files that set `reward_weights` (the repetition may be weighted on purpose), distinct
    functions built from one factory (`[length_reward(256), length_reward(1024)]`), a
    function called on different arguments (`score(a) + score(b)`) and weighted terms
    (`acc(c) + 0.5 * acc(c)`) are not reported.

    ## Why is this bad?
    The trainer scores every listed function and sums the scores, so a function listed twice
    counts double: the balance between correctness and format (or length) rewards is not
    the one the script seems to ask for, and the logs show the same reward twice rather
    than a weight. Usually a copy-paste slip, where another function was meant.

    ## Example
    ```python
    trainer = GRPOTrainer(model=model, reward_funcs=[accuracy_reward, format_reward, accuracy_reward], ...)
    ```

    ## Use instead
    ```python
    config = GRPOConfig(reward_weights=[2.0, 1.0], ...)
    trainer = GRPOTrainer(model=model, reward_funcs=[accuracy_reward, format_reward], args=config, ...)
    ```

    ## Options
    None.
    """

    code = "RL406"
    name = "duplicate-reward-function"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    message = "`{function}` is {how} twice: its reward counts double ({fix})"
    triggers = _REWARD_TRIGGERS

    def __init__(self, file) -> None:
        super().__init__(file)
        self._reported: Set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if "reward_weights" in self.file.text:
            return
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in REWARD_LIST_KEYWORDS:
                continue
            listed = arg.value
            if isinstance(listed, cst.Name):
                listed = self.file.fact(Values).held(listed)
            if not isinstance(listed, (cst.List, cst.Tuple)):
                continue
            seen: Set[str] = set()
            for element in listed.elements:
                function = dotted(element.value) if not isinstance(element, cst.StarredElement) else None
                if function in seen:
                    self.report(element.value, function=function, how=f"listed in `{arg.keyword.value}`",
                                fix="list it once, or weight it with `reward_weights`")
                elif function is not None:
                    seen.add(function)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Add):
            return
        rewards = self.file.fact(RewardFunctions)
        code = self.file.module.code_for_node
        seen: Set[str] = set()
        for term in _addends(node):
            if not isinstance(term, cst.Call) or not rewards.named(call_tail(term) or ""):
                continue
            spelled = code(term)
            if spelled in seen and id(term) not in self._reported:
                self._reported.add(id(term))
                self.report(term, function=spelled, how="added into the summed reward",
                            fix="add it once, or multiply it by the weight you mean")
            seen.add(spelled)


def _addends(node: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The terms of a chain of `+`: `a + (b + c)` -> a, b, c."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _addends(node.left) + _addends(node.right)
    return [node]


_CHAR_NAMES = {",": "commas", " ": "spaces", "$": "`$`", "%": "`%`", "-": "minus signs"}


class LenientAnswerMatch(FunctionRule):
    """
    ## What it does
    Reports, in a reward function or a helper it calls, a test that gives credit when the
    dataset's reference answer occurs in the model's text rather than when the two are
    equal: `gold in completion`, `gold in extracted_answer`, `any(a in text for a in
    answers)`, `completion.find(gold) >= 0`, `text.count(gold) > 0`, and the reverse,
    `prediction in gold.strip()` (an empty prediction is in every gold). The gold is a field
    read by its key (`row["answer"]`, `example.get("solution")`), a reward function's column
    parameter named for it (`ground_truth`, `solution` beside `completions`), or what a
    helper is always given from one; the model's text is a completion or a piece of one (a
    slice, split, strip, regex group or `re.findall`). Membership of the prediction in a
    list of accepted answers, equality after normalising both sides, math verifiers
    (`math_verify`, `sympy`) and format checks (`"<answer>" in text`) are not reported.
    The model's words gathered into a collection (`set(text.split())`) are still its text:
    `all(w in pred_words for w in gold_words)` pays any answer that lists the gold's words
    among others. A count of overlapping words (`sum(w in pred_words for w in gold_words)`,
    the recall or precision of a token F1) is a graded score and is not reported.

    It also reports an equality test (`==`, `!=`) of the gold against the model's text that
    removes commas, spaces, `$` or `%` from one side only, when the file shows it: the gold
    is cleaned (`pred == gold.replace(",", "")`) while the model's side can still hold the
    character (free text, or a regex group such as `(.*?)` or `([0-9,.]+)` that can match it), or
    both sides are cleaned, differently (`pred.replace(",", "").strip() == gold.strip()`,
    through names and the file's helpers). A prediction cleaned beside a raw gold is not
    reported: that is how a reward reads a dataset whose preparation already cleaned the
    reference (verl's GSM8K scorer). Nor are sides converted to numbers, a digit-only group
    beside the cleaned gold, or one normaliser applied to both sides, except for the sign: a
    number keeps it, so a group that reads `5` of `-5` (`re.findall("[0-9]+", text)[-1]`)
    beside a cleaned gold that keeps it never matches a negative answer.

    ## Why is this bad?
    Containment pays for answers that are wrong. A completion that lists many numbers
    contains the right one; the gold `2` is inside `12`, `-2` and `2.5`; the letter `A` is
    inside nearly every sentence. The policy learns to enumerate candidates or to pad its
    answer, and the reward curve rises while accuracy does not. Normalising one side only
    does the opposite: a correct `1,000` never equals the cleaned `1000`, so right answers
    in the dataset's own format are scored as wrong, and the policy learns a format instead
    of the task.

    ## Example
    ```python
    def correctness(completions, ground_truth, **kwargs):
        return [1.0 if str(gt) in text else 0.0 for text, gt in zip(completions, ground_truth, strict=True)]

    def exact(completions, ground_truth, **kwargs):
        answers = [text.split("####")[-1].strip() for text in completions]
        return [float(a == gt.replace(",", "")) for a, gt in zip(answers, ground_truth, strict=True)]
    ```

    ## Use instead
    ```python
    def correctness(completions, ground_truth, **kwargs):
        answers = [extract_boxed(text) for text in completions]
        return [1.0 if normalise(a) == normalise(str(gt)) else 0.0
                for a, gt in zip(answers, ground_truth, strict=True)]
    ```
    or a verifier (`math_verify.verify(parse(gt), parse(text))`).

    ## Options
    None.
    """

    code = "RL407"
    name = "lenient-answer-match"
    severity = Severity.WARNING
    tier = Tier.SUSPICIOUS
    message = "`{test}` in `{function}` {what}"
    triggers = _REWARD_TRIGGERS

    def __init__(self, file) -> None:
        super().__init__(file)
        self._counted: Set[int] = set()  # comparisons counted by `sum(...)`: a graded overlap, not a credit

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "sum" and len(node.args) == 1 and isinstance(
                node.args[0].value, (cst.GeneratorExp, cst.ListComp)):
            counted = node.args[0].value
            self._counted.update([id(counted.elt)] + [id(c.test) for c in walk(counted.for_in) if isinstance(c, cst.CompIf)])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        function = self.function
        if function is None or id(node) in self._counted or not self.file.fact(RewardFunctions).scores(function):
            return
        matches = self.file.fact(AnswerMatches)
        found = matches.containment(node, self.scope) if contains(node) is not None else None
        if found is not None:
            gold, text = self.source(found.gold, 30), self.source(found.text, 30)
            where = f"`{gold}` occurs anywhere in `{text}`" if found.inside else \
                f"`{text}` occurs anywhere in `{gold}` (an empty answer always does)"
            what = f"pays when {where}: answers that list candidates or contain the gold inside another number " \
                   "are rewarded"
            self.report(node, test=self.source(node), function=function.name.value, what=what)
            return
        one_sided = matches.one_sided(node, self.scope)
        if one_sided is not None:
            chars = " and ".join(_CHAR_NAMES[c] for c in sorted(one_sided.chars))
            cleaned, other = self.source(one_sided.cleaned, 30), self.source(one_sided.other, 30)
            what = (f"removes {chars} from `{cleaned}` but not from `{other}`, which can hold them: "
                    f"{'a correct answer' if one_sided.gold_cleaned else 'a gold answer'} written with them never "
                    "matches")
            self.report(node, test=self.source(node), function=function.name.value, what=what)
