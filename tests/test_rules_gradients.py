"""The gradient rules' messages name the value and how it got there."""
import textwrap

from rllint.runner import lint_text
from rllint.settings import Settings


def messages(source: str, code: str):
    result = lint_text(textwrap.dedent(source), "example.py", Settings(select=[code], options={"rl-context": "always"}))
    return [(d.line, d.message) for d in result.diagnostics]


def test_item_in_loss_path_names_the_chain():
    assert messages("""
        def step(policy, batch, optimizer):
            logps = policy(batch["input_ids"]).logits.log_softmax(-1)
            ratio = (logps - batch["old_logps"]).exp()
            scale = ratio.mean().item()
            pg_loss = -(ratio * batch["advantages"]).mean() * scale
            loss = pg_loss + 0.0
            loss.backward()
            optimizer.step()
    """, "RL503") == [(5, "`ratio.mean().item()` on line 5 is in the loss: `loss` (line 8) -> `pg_loss` -> `scale`; "
                          "gradients stop here")]


def test_in_place_names_the_forward():
    assert messages("""
        def f(model, ids, mask):
            logps = model(ids).logits.log_softmax(-1)
            logps.masked_fill_(mask, 0.0)
            return logps
    """, "RL504") == [(4, "in-place `.masked_fill_()` on `logps`, which carries gradient from policy forward "
                          "`model(ids)`: autograd may need the overwritten values (use `masked_fill`, `torch.where` "
                          "or an out-of-place op)")]


def test_reference_forward_names_the_model():
    assert messages("""
        def f(ref_model, ids):
            return ref_model(ids).logits
    """, "RL502") == [(3, "`ref_model(ids)` runs the reference `ref_model` with gradient enabled: autograd keeps its "
                          "activations for a backward that must not reach it (wrap it in `torch.no_grad()` or detach "
                          "the result)")]


def test_custom_reference_names_from_the_options():
    source = """
        import copy

        def build(policy):
            anchor = copy.deepcopy(policy)
            return anchor
    """
    assert messages(source, "RL501") == []
    result = lint_text(textwrap.dedent(source), "example.py",
                       Settings(select=["RL501"], options={"reference-model-names": ["anchor"]}))
    assert [(d.line, d.code) for d in result.diagnostics] == [(5, "RL501")]
