"""Gold answers (the dataset's reference) and how a function matches the model's answer against them."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.gold import AnswerMatches, GoldAnswers
from rllint.analysis.text import Scopes, walk
from rllint.runner import FileContext
from rllint.settings import Settings


def analyse(source: str) -> FileContext:
    text = textwrap.dedent(source)
    return FileContext("example.py", text, cst.parse_module(text), ast.parse(text), Settings())


def scope_of(file: FileContext, name: str):
    fn = next(n for n in walk(file.module, into_functions=True)
              if isinstance(n, cst.FunctionDef) and n.name.value == name)
    return file.fact(Scopes).of(fn)


def gold(file: FileContext, function: str, name: str) -> bool:
    return file.fact(GoldAnswers).is_gold(cst.Name(name), scope_of(file, function))


def test_a_reward_functions_column_named_for_the_reference_is_gold():
    file = analyse("""
        def exact(completions, gold_answer, **kwargs): ...
        def graded(prompts, completions, solution, **kwargs): ...
        def compute_score(data_source, solution_str, ground_truth, extra_info=None): ...
        def answer_reward(solution, reference): ...
        def paced(completions, target_length, **kwargs): ...
        def render(answer, text): ...
    """)
    assert gold(file, "exact", "gold_answer")
    assert gold(file, "graded", "solution")  # beside the completions it is the dataset's column
    assert gold(file, "compute_score", "ground_truth")
    assert not gold(file, "compute_score", "solution_str")  # verl's completion
    assert gold(file, "answer_reward", "reference")
    assert not gold(file, "answer_reward", "solution")  # its lone text parameter: the completion
    assert not gold(file, "paced", "target_length")
    assert not gold(file, "render", "answer")  # no caller gives it a reference, and it scores nothing


def test_elements_of_a_gold_column_are_gold_and_a_name_rebound_to_the_models_text_is_not():
    file = analyse("""
        def scorer(completions, answers, **kwargs):
            out = []
            for text, options in zip(completions, answers, strict=True):
                for option in options:
                    out.append(option)
            answer = text.split()[-1]
            return out, answer
    """)
    assert gold(file, "scorer", "option")
    assert not gold(file, "scorer", "answer")


def containments(source: str, function: str):
    file = analyse(source)
    scope = scope_of(file, function)
    matches = file.fact(AnswerMatches)
    code = file.module.code_for_node
    found = []
    for node in scope.comparisons:
        c = matches.containment(node, scope)
        if c is not None:
            found.append((code(c.gold), code(c.text), c.inside))
    return found


def test_containment_of_the_gold_in_the_completion_a_piece_of_it_or_a_regex_group():
    source = r"""
        import re

        def judge_reward(responses, label, **kwargs):
            hits = []
            for response, want in zip(responses, label, strict=True):
                tail = response.strip()[-200:]
                m = re.search(r"Answer: (\S+)", response)
                said = m.group(1) if m else None
                hits.append((want in response, str(want) in tail, want.lower() in said,
                             response.rfind(want) > -1, tail.count(want) >= 1, want == said))
            return hits
    """
    assert containments(source, "judge_reward") == [
        ("want", "response", True), ("str(want)", "tail", True), ("want.lower()", "said", True),
        ("want", "response", True), ("want", "tail", True)]


def test_the_models_text_in_a_string_gold_but_not_in_a_list_of_accepted_answers():
    source = """
        def judge(completions, answer, aliases, **kwargs):
            out = []
            for c, a, accepted in zip(completions, answer, aliases, strict=True):
                guess = c.strip().splitlines()[-1]
                out.append((guess in a.strip(), guess in accepted, guess in a))
            return out
    """
    assert containments(source, "judge") == [("a.strip()", "guess", False)]


def test_the_models_text_is_followed_through_file_helpers_and_their_callers():
    source = """
        def last_line(text):
            rows = [row for row in text.splitlines() if row.strip()]
            return rows[-1] if rows else ""

        def hit(pred, ref):
            return ref in pred

        def score_reward(completion, answer):
            return float(hit(last_line(completion), answer))
    """
    assert containments(source, "hit") == [("ref", "pred", True)]


def test_format_markers_other_columns_and_text_of_unknown_calls_are_not_containment_of_the_gold():
    source = """
        from math_verify import parse

        def judge(completions, solution, keywords, **kwargs):
            out = []
            for c, s, ks in zip(completions, solution, keywords, strict=True):
                out.append(("<answer>" in c, any(k in c for k in ks), s in parse(c), c.find("####") >= 0))
            return out
    """
    assert containments(source, "judge") == []
