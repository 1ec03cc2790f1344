"""Gold answers (the dataset's reference) and how a function matches the model's answer against them."""
import ast
import re
import sys
import textwrap

import libcst as cst
import pytest

from rllint.analysis.gold import ALL_CHARS, AnswerMatches, GoldAnswers, group_chars, removed_by
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


def matched(source: str, function: str, find, describe):
    """`describe(code, fact)` of each comparison in `function` for which `find(matches, node, scope)` gives a fact."""
    file = analyse(source)
    scope = scope_of(file, function)
    matches = file.fact(AnswerMatches)
    facts = (find(matches, node, scope) for node in scope.comparisons)
    return [describe(file.module.code_for_node, fact) for fact in facts if fact is not None]


def containments(source: str, function: str):
    return matched(source, function, AnswerMatches.containment,
                   lambda code, c: (code(c.gold), code(c.text), c.inside))


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


# ---------------------------------------------------------------- one-sided normalisation

def test_a_cleaning_step_is_read_by_running_it_on_sample_answers():
    assert removed_by(lambda s: s.replace(",", "")) == {","}
    assert removed_by(lambda s: s.strip().lower()) == frozenset()  # the ends only: `1 000` keeps its space
    assert removed_by(lambda s: s.strip("$%")) == {"$", "%"}
    assert removed_by(lambda s: re.sub(r"[\s$]+", "", s)) == {" ", "$"}
    assert removed_by(lambda s: re.sub(r"(\d),(\d)", r"\1\2", s)) == {","}
    assert removed_by(lambda s: re.sub(r"(", "", s)) is None


def test_what_a_regex_group_can_hold_is_read_from_the_parsed_pattern():
    assert group_chars(r"Final answer: (.+)", 1) == ALL_CHARS
    assert group_chars(r"<ans>([^<]*)</ans>", 1) == ALL_CHARS
    assert group_chars(r"=\s*([0-9.,]+)", 1) == {","}
    assert group_chars(r"result (\S+)", 1) == {",", "$", "%", "-"}
    assert group_chars(r"(-?\d+(?:\.\d+)?)", 1) == {"-"}
    assert group_chars(r"total:? \$?(\d+)|none", 1) == frozenset()
    assert group_chars(r"total:? \$?(\d+)", 0) == {" ", "$"}
    assert group_chars(r"(\w+)%", 1) == frozenset()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="atomic groups and possessive repeats came with Python 3.11")
def test_atomic_groups_and_possessive_repeats_are_read_through():
    assert group_chars(r"answer: (?>([^\n]*))", 1) == ALL_CHARS
    assert group_chars(r"(?>\d+),", 0) == {","}
    assert group_chars(r"(\d++)", 1) == frozenset()


def test_a_pattern_that_is_not_read_gives_no_answer():
    assert group_chars(r"((?=\d)[\d,]+)", 1) is None  # a lookahead inside the group
    assert group_chars(r"(?x) ( [\d ]+ )", 1) is None  # verbose: its spaces mean nothing
    assert group_chars(r"(\d+", 1) is None
    assert group_chars(r"(\d+)", 2) is None


def one_sided(source: str, function: str):
    return matched(source, function, AnswerMatches.one_sided,
                   lambda code, o: (code(o.cleaned), code(o.other), "".join(sorted(o.chars)), o.gold_cleaned))


def test_both_sides_cleaned_differently_drop_what_the_other_keeps():
    source = r"""
        import re

        def squash(value):
            return re.sub(r"[\s,]", "", value.lower())

        def grade(completions, references, **kwargs):
            marks = []
            for out, ref in zip(completions, references, strict=True):
                tail = out.rpartition("ANSWER:")[2]
                guess = tail.strip()
                guess = guess.replace("%", "")
                marks.append((guess == ref.strip(), squash(tail) != ref.lower(), squash(tail) == squash(ref)))
            return marks
    """
    assert one_sided(source, "grade") == [("guess", "ref.strip()", "%", False),
                                          ("squash(tail)", "ref.lower()", " ,", False)]


def test_a_cleaned_gold_beside_model_text_that_can_hold_what_it_dropped():
    source = r"""
        import re

        LAST = re.compile(r"answer is\s*(.+?)\.?$")

        def grade(completions, solution, **kwargs):
            marks = []
            for text, sol in zip(completions, solution, strict=True):
                free = LAST.search(text)
                digits = re.search(r"(\d+)$", text)
                words = text.split()
                marks.append((free.group(1) == sol.replace(",", ""), digits.group(1) == sol.replace(",", ""),
                              words[-1] == sol.replace(" ", ""), words[-1] == sol.replace("$", "")))
            return marks
    """
    # `(\d+)$` reads `5` of `-5`: it drops the sign that the cleaned gold keeps.
    assert one_sided(source, "grade") == [("sol.replace(\",\", \"\")", "free.group(1)", ",", True),
                                          ("digits.group(1)", "sol.replace(\",\", \"\")", "-", False),
                                          ("sol.replace(\"$\", \"\")", "words[-1]", "$", True)]


def test_a_cleaned_prediction_beside_a_raw_gold_numbers_and_one_normaliser_are_not_one_sided():
    source = r"""
        def tidy(s):
            return s.replace(",", "").replace("$", "").strip()

        def grade(completions, gold, **kwargs):
            marks = []
            for text, g in zip(completions, gold, strict=True):
                pred = text.split("=")[-1].replace(",", "")
                marks.append((pred == g, float(pred) == float(g.replace(",", "")), tidy(pred) == tidy(g),
                              pred.strip() == g.replace(",", "").strip(), text.lower() == "done"))
            return marks
    """
    assert one_sided(source, "grade") == []
