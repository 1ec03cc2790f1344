"""RL501-RL505 on the fact engine: each finding follows a value from where the code makes it; names decide
nothing, and where the proof runs out the rules are silent."""
import textwrap

import pytest

from rllint.runner import lint_files, lint_text
from rllint.settings import Settings

SETUP = """
import copy
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)
"""


OFFSET = SETUP.count("\n")  # messages name lines of the whole text


def found(source: str, code: str, select=None, setup: str = SETUP):
    text = setup + textwrap.dedent(source)
    result = lint_text(text, "train.py", Settings(select=select or ["ALL"], options={"rl-context": "always"}))
    offset = setup.count("\n")
    return [(d.line - offset, d.message) for d in result.diagnostics if d.code == code]


def lines(source: str, code: str, select=None, setup: str = SETUP):
    return [line for line, _ in found(source, code, select, setup)]


# ---- RL503 item-in-loss-path ----

def test_rl503_a_python_number_inside_the_backpropagated_loss():
    assert found("""
        def step(ids, adv):
            logps = policy(ids).logits.log_softmax(-1)
            kl = float((logps - logps.detach()).mean())
            loss = -(logps.sum(-1) * adv).mean() + 0.1 * kl
            loss.backward()
    """, "RL503") == [(4, "`float((logps - logps.detach()).mean())` cuts a tensor that carries gradient out of the "
                          f"loss backpropagated on line {6 + OFFSET}; gradients stop here")]


def test_rl503_through_a_helper_and_a_returned_tuple():
    assert lines("""
        def kl_term(logps, ref):
            delta = ref - logps
            return torch.tensor((torch.exp(delta) - delta - 1).mean().item())

        def losses(ids, ref):
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            return -logps.mean() + kl_term(logps, ref), logps.mean().item()

        def step(ids, ref):
            loss, metric = losses(ids, ref)
            loss.backward()
    """, "RL503") == [4]


def test_rl503_logging_values_in_a_returned_dict_are_not_the_loss_key():
    assert lines("""
        def compute(ids, adv):
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            loss = -(logps * adv).mean()
            return {"loss": loss.item(), "pg": logps.mean().item(), "loss_tensor": loss}

        def step(ids, adv):
            stats = compute(ids, adv)
            stats["loss_tensor"].backward()
            print(stats["loss"])
    """, "RL503") == []


def test_rl503_item_after_backward_and_on_data_is_not_reported():
    assert lines("""
        def step(ids, adv, mask):
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            n_tokens = float(mask.sum())
            loss = -(logps * adv).sum() / n_tokens
            loss.backward()
            return loss.item()
    """, "RL503") == []


def test_rl503_trainer_compute_loss_is_the_frameworks_loss():
    assert lines("""
        from trl import GRPOTrainer

        class MyTrainer(GRPOTrainer):
            def compute_loss(self, model, inputs, return_outputs=False):
                logps = model(inputs["input_ids"]).logits.log_softmax(-1).sum(-1)
                scale = logps.mean().item()
                return -(logps * inputs["advantages"]).mean() * scale

        trainer = MyTrainer(model=policy)
    """, "RL503") == [7]


def test_rl503_the_log_probs_of_a_received_policy_nothing_in_the_project_runs():
    # a model known by its use (token ids by keyword); a training step, and a policy loss returned to a caller out of
    # the project; `.item()` for a logger outside the loss is not reported
    assert lines("""
        def accumulate(actor, batches):
            totals = []
            for ids, adv in batches:
                logps = actor(input_ids=ids).logits.log_softmax(-1).sum(-1)
                totals.append(-(logps * adv).mean())
            loss = torch.tensor(sum(float(t) for t in totals), requires_grad=True)
            loss.backward()

        def kl_regularized_loss(actor, ids, ref_logps, adv, beta=0.1):
            logps = actor(input_ids=ids).logits.log_softmax(-1).sum(-1)
            kl = (logps - ref_logps).mean().item()
            return -(logps * adv).mean() + beta * kl

        def logged_loss(actor, ids, adv, log):
            logps = actor(input_ids=ids).logits.log_softmax(-1).sum(-1)
            loss = -(logps * adv).mean()
            log(loss.item())
            return loss
    """, "RL503") == [7, 12]


def test_rl503_a_received_policy_the_project_runs_stays_unknown():
    assert lines("""
        def kl_regularized_loss(actor, ids, ref_logps, adv, beta=0.1):
            logps = actor(input_ids=ids).logits.log_softmax(-1).sum(-1)
            kl = (logps - ref_logps).mean().item()
            return -(logps * adv).mean() + beta * kl

        def evaluate(actor, batches):
            with torch.no_grad():
                return [kl_regularized_loss(actor, *batch) for batch in batches]
    """, "RL503") == []


# ---- RL504 in-place-on-graph-tensor ----

def test_rl504_overwriting_the_output_of_exp():
    assert found("""
        def step(ids, old, adv, mask):
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            ratio = torch.exp(logps - old)
            ratio[mask == 0] = 0.0
            (ratio * adv).mean().backward()
    """, "RL504") == [(5, "in-place `[...] =` on `ratio`, which carries gradient: `exp` saved this tensor for its "
                          "backward, which raises once the values change (use `masked_fill`, `torch.where` or an "
                          "out-of-place op)")]


def test_rl504_an_operand_of_a_product_and_a_slice_of_the_logits():
    assert lines("""
        def step(ids, adv, k):
            logits = policy(ids).logits
            logps = logits.log_softmax(-1).sum(-1)
            weighted = logps * logps.exp()
            logps.mul_(2.0)
            tail = logits[:, -k:]
            tail.div_(0.7)
            weighted.mean().backward()
    """, "RL504") == [6, 8]


def test_rl504_rows_of_a_tensor_used_whole_afterwards_keep_nothing_alive_that_is_not_needed():
    source = """
        def constrained(ids, keep):
            logits = policy(ids).logits[0].clone()
            for row, allowed in enumerate(keep):
                logits[row].masked_fill_(~allowed, float("-inf"))
            return logits.log_softmax(-1)

        def step(ids, keep):
            constrained(ids, keep).sum().backward()
    """
    assert lines(source, "RL504", select=["ALL"]) == []
    assert lines(source, "RL504", select=["RL504"]) == [5]


def test_rl504_an_alias_read_later_sees_the_masked_values():
    assert lines("""
        def step(ids, mask):
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            kept = logps
            logps[mask == 0] = 0.0
            (kept.mean() + logps.mean()).backward()
    """, "RL504") == [5]


def test_rl504_harmless_in_place_ops_need_the_rule_named():
    source = """
        def step(ids, temperature, mask):
            logits = policy(ids).logits
            logits.div_(temperature)
            picked = logits.log_softmax(-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
            picked.masked_fill_(mask == 0, 0.0)
            picked.sum().backward()
    """
    assert lines(source, "RL504", select=["ALL"]) == []
    assert lines(source, "RL504", select=["RL504"]) == [4, 6]


def test_rl504_data_tensors_detached_values_and_no_grad_helpers():
    assert lines("""
        def labels_of(input_ids, pad):
            labels = input_ids.clone()
            labels[labels == pad] = -100
            return labels

        def sample(logits):
            logits[:, 0] = -1e9
            return logits.softmax(-1)

        def rollout(ids):
            with torch.no_grad():
                probs = sample(policy(ids).logits)
            return probs

        def step(ids):
            base = policy(ids).logits.log_softmax(-1).detach()
            base[:, 0] = 0.0
            return base
    """, "RL504") == []


def test_rl504_a_helper_whose_callers_run_it_with_gradient_is_reported_once():
    assert lines("""
        def mask_probs(logits, mask):
            probs = logits.softmax(-1)
            probs[mask] = 0.0
            return probs

        def step(ids, mask):
            mask_probs(policy(ids).logits, mask).sum().backward()

        def rollout(ids, mask):
            with torch.no_grad():
                return mask_probs(policy(ids).logits, mask)
    """, "RL504") == [4]


# ---- RL502 reference-forward-with-grad ----

def test_rl502_an_untrained_unfrozen_model_run_with_gradient_through_a_helper():
    assert found("""
        ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")

        def token_logps(model, ids):
            return model(ids).logits.log_softmax(-1)

        def step(ids):
            logps = token_logps(policy, ids)
            ref_logps = token_logps(ref, ids)
            (logps - ref_logps).mean().backward()
            optimizer.step()
    """, "RL502") == [(9, "`token_logps(ref, ids)` runs `ref`, a model this file never trains, with gradient "
                          "enabled: autograd keeps its activations for a backward that must not reach it (wrap it "
                          "in `torch.no_grad()`)")]


def test_rl502_a_pretrained_backbone_inside_a_trained_module_trains_with_it():
    """`critic.parameters()` holds its backbone's: the backbone's forward inside the critic's is trained with it,
    not a reference forward."""
    source = """
        import torch.nn as nn
        from transformers import AutoModel

        class Critic(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.backbone = AutoModel.from_pretrained(name)
                self.head = nn.Linear(self.backbone.config.hidden_size, 1)

            def forward(self, ids, attn):
                return self.head(self.backbone(input_ids=ids, attention_mask=attn).last_hidden_state).squeeze(-1)

        def update(actor, critic, actor_opt, critic_opt, batch):
            logps = actor(batch["ids"]).logits.log_softmax(-1).mean(-1)
            values = critic(batch["ids"], batch["attn"])
            loss = ((values - batch["returns"]) ** 2).mean() - (logps * batch["adv"]).mean()
            loss.backward()
            actor_opt.step()
            critic_opt.step()

        def main(batches):
            actor = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
            critic = Critic("gpt2").cuda()
            actor_opt = torch.optim.AdamW(actor.parameters(), lr=1e-6)
            critic_opt = torch.optim.AdamW(critic.parameters(), lr=1e-5)
            for batch in batches:
                update(actor, critic, actor_opt, critic_opt, batch)
    """
    imports = "import torch\nfrom transformers import AutoModelForCausalLM\n"
    assert lines(source, "RL502", select=["RL502"], setup=imports) == []


def test_rl502_a_forward_whose_graph_reaches_no_loss_is_reported_only_when_named():
    """A model probed with gradient (a notebook cell, a debug print) records nothing the step backpropagates."""
    source = """
        probe = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")

        def step(ids):
            print(probe(ids).logits.log_softmax(-1).mean())
            policy(ids).logits.log_softmax(-1).mean().backward()
            optimizer.step()
    """
    assert lines(source, "RL502") == []
    assert lines(source, "RL502", select=["RL502"]) == [5]


def test_rl502_a_copy_on_a_trainer_attribute():
    assert lines("""
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.old = copy.deepcopy(model)

            def step(self, ids):
                new = self.model(ids).logits
                old = self.old(ids).logits
                (new - old).pow(2).mean().backward()

        Trainer(policy)
    """, "RL502") == [9]


def test_rl502_look_alikes():
    assert lines("""
        frozen = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B").requires_grad_(False)
        ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        critic = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        critic_opt = torch.optim.AdamW(critic.parameters(), lr=1e-5)
        received = load_elsewhere()

        @torch.no_grad()
        def ref_logps(ids):
            return ref(ids).logits

        def step(ids, outside):
            new = policy(ids).logits
            a = ref_logps(ids)
            b = ref(ids).logits.detach()
            c = frozen(ids).logits
            d = critic(ids).logits
            e = outside(ids).logits
            with torch.inference_mode():
                f = ref(ids).logits
            (new - a - b - c - d - e - f).mean().backward()
    """, "RL502") == []


def test_rl502_a_model_handed_to_unseen_code_is_out_of_sight():
    assert lines("""
        ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        prepare_reference(ref)

        def step(ids):
            (policy(ids).logits - ref(ids).logits).mean().backward()
    """, "RL502") == []


def test_rl502_a_frozen_reference_is_reported_only_when_named():
    source = """
        ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        for p in ref.parameters():
            p.requires_grad = False

        def step(ids):
            (policy(ids).logits - ref(ids).logits).mean().backward()
    """
    assert lines(source, "RL502", select=["ALL"]) == []
    assert lines(source, "RL502", select=["RL502"]) == [7]


def test_rl502_needs_a_training_step_in_the_file():
    assert lines("""
        ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        scores = ref(ids).logits
    """, "RL502") == []


def test_rl502_a_module_with_no_parameters_is_a_loss_not_a_model():
    assert lines("""
        class Clipped(torch.nn.Module):
            def __init__(self, clip=0.2, scale=1):
                super().__init__()
                self.low, self.high = 1 - clip, 1 + clip
                self.scale = float(scale)
                self.seen = []

            def forward(self, ratio, adv):
                return -torch.min(ratio * adv, ratio.clamp(self.low, self.high) * adv).mean() * self.scale

        surrogate = Clipped()
        ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")

        def step(ids, old, adv):
            with torch.no_grad():
                ref_logps = ref(ids).logits.log_softmax(-1).sum(-1)
            penalty = surrogate(torch.exp(ref_logps - old), adv)
            new = policy(ids).logits.log_softmax(-1).sum(-1)
            (surrogate(torch.exp(new - old), adv) + penalty).backward()
            optimizer.step()
    """, "RL502") == []


def test_rl502_a_module_that_holds_a_layer_or_a_given_model_is_a_model():
    assert lines("""
        class Scorer(torch.nn.Module):
            def __init__(self, width):
                super().__init__()
                self.head = torch.nn.Linear(width, 1)

            def forward(self, features):
                return self.head(features).squeeze(-1)

        class Anchored(torch.nn.Module):
            def __init__(self, anchor):
                super().__init__()
                self.anchor = anchor

            def forward(self, ids):
                return self.anchor(ids).logits.log_softmax(-1).sum(-1)

        scorer = Scorer(16)
        anchored = Anchored(AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B"))

        def step(ids, features):
            new = policy(ids).logits.log_softmax(-1).sum(-1)
            rewards = scorer(features)
            ref = anchored(ids)
            (-(new * rewards).mean() + (new - ref).mean()).backward()
            optimizer.step()
    """, "RL502") == [23, 24]


def test_rl502_a_module_fed_the_policys_graph_is_not_a_reference_forward():
    assert lines("""
        class Head(torch.nn.Module):
            def __init__(self, width):
                super().__init__()
                self.proj = torch.nn.Linear(width, 1)

            def forward(self, hidden):
                return self.proj(hidden).squeeze(-1)

        head = Head(896)

        def step(ids, returns):
            last = policy(ids).logits[:, -1]
            values = head(last.float())
            ((values - returns) ** 2).mean().backward()
            optimizer.step()
    """, "RL502") == []


def test_rl502_a_model_whose_gradients_are_read_is_the_one_differentiated():
    assert lines("""
        probe = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        clipped = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        averaged = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")

        def check(ids):
            probe(ids).logits.log_softmax(-1).sum().backward()
            for name, weight in probe.named_parameters():
                assert weight.grad is None or torch.isfinite(weight.grad).all(), name

        def step(ids):
            new = policy(ids).logits.log_softmax(-1).sum(-1)
            other = clipped(ids).logits.log_softmax(-1).sum(-1)
            anchor = averaged(ids).logits.log_softmax(-1).sum(-1)
            (new - other - anchor).mean().backward()
            torch.nn.utils.clip_grad_norm_(clipped.parameters(), 1.0)
            for p in averaged.parameters():
                p.data.mul_(0.99)
            optimizer.step()
    """, "RL502") == [14]


# ---- RL505 policy-forward-under-no-grad ----

def test_rl505_a_loss_built_only_from_no_grad_forwards():
    assert found("""
        def token_logps(model, ids):
            return model(ids).logits.log_softmax(-1).sum(-1)

        def step(ids, scores):
            rewards = torch.tensor(scores)
            adv = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
            with torch.no_grad():
                old = token_logps(policy, ids)
                new = token_logps(policy, ids)
            loss = -(torch.exp(new - old) * adv).mean()
            loss.backward()
    """, "RL505") == [(10, f"the loss `loss` backpropagated on line {12 + OFFSET} has no gradient: it is cut here "
                          "(under no_grad), and backpropagating it trains nothing (compute the current log-probs with "
                          "gradient)")]


def test_rl505_a_zero_weighted_term_does_not_give_the_loss_a_gradient():
    assert lines("""
        def step(ids, scores):
            adv = torch.tensor(scores)
            logps = policy(ids).logits.log_softmax(-1).sum(-1).detach()
            loss = -(logps * adv).mean() + 0.0 * policy(ids).logits.sum()
            loss.backward()
    """, "RL505") == [4]


def test_rl505_look_alikes():
    assert lines("""
        def step(ids, adv):
            with torch.no_grad():
                old = policy(ids).logits.log_softmax(-1).sum(-1)
            new = policy(ids).logits.log_softmax(-1).sum(-1)
            (-(torch.exp(new - old) * adv).mean()).backward()

        def unknown(loss):
            loss.backward()
    """, "RL505") == []


def test_rl505_a_head_with_weights_applied_after_a_no_grad_encoder_is_not_reported():
    """A frozen encoder run under no_grad in one method, a linear head the project trains applied in another:
    the loss has the head's gradient."""
    assert lines("""
        from transformers import AutoModel

        class Critic(torch.nn.Module):
            def __init__(self, name):
                super().__init__()
                self.encoder = AutoModel.from_pretrained(name)
                self.proj = torch.nn.Linear(768, 1)

            def score(self, ids):
                with torch.no_grad():
                    h = self.encoder(input_ids=ids).last_hidden_state[:, 0]
                return self.proj(h).squeeze(-1)

        def fit(critic, batches, targets):
            opt = torch.optim.SGD(critic.parameters(), lr=1e-3)
            for ids in batches:
                F.mse_loss(critic.score(ids), target=targets).backward()
                opt.step()

        fit(Critic("bert-base-uncased"), [], None)
    """, "RL505") == []


def test_rl505_an_activation_a_loss_module_or_a_frozen_layer_after_the_cut_keeps_it():
    assert lines("""
        squash = torch.nn.Tanh()
        probe = torch.nn.Linear(8, 1)
        probe.requires_grad_(False)

        def step(ids, target):
            with torch.no_grad():
                hidden = policy(ids).logits
            loss = F.mse_loss(squash(hidden).mean(-1), target) + probe(hidden).mean() + \
                torch.nn.SmoothL1Loss()(hidden.mean(-1), target)
            loss.backward()
    """, "RL505") == [8]


# ---- RL501 reference-not-frozen ----

def test_rl501_the_policy_handed_to_a_trainer_as_its_reference():
    assert lines("""
        from trl import PPOTrainer
        alias = policy
        trainer = PPOTrainer(config, model=policy, ref_model=alias, processing_class=tokenizer)
    """, "RL501") == [4]


def test_rl501_a_trainer_reference_whose_parameters_train():
    assert lines("""
        from trl import PPOTrainer
        ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        both = torch.optim.AdamW([{"params": policy.parameters()}, {"params": ref.parameters()}])
        trainer = PPOTrainer(config, model=policy, ref_model=ref, optimizers=(both, None))
    """, "RL501") == [4]


def test_rl501_names_alone_are_reported_only_when_the_rule_is_named():
    source = """
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.ref_model = self.model
    """
    assert lines(source, "RL501", select=["ALL"]) == []
    assert lines(source, "RL501", select=["RL501"]) == [5]


def test_rl501_look_alikes():
    assert lines("""
        from trl import PPOTrainer, create_reference_model
        ref = create_reference_model(policy)
        t1 = PPOTrainer(config, model=policy, ref_model=ref)
        t2 = PPOTrainer(config, model=policy, ref_model=None)
        copy_ = copy.deepcopy(policy).requires_grad_(False)
        t3 = PPOTrainer(config, model=policy, ref_model=copy_)
    """, "RL501") == []


# ---- RL506 advantage-not-detached ----

VALUE = SETUP + """
from transformers import AutoModelForSequenceClassification
critic = AutoModelForSequenceClassification.from_pretrained("Qwen/Qwen2.5-0.5B", num_labels=1)
critic_optimizer = torch.optim.AdamW(critic.parameters(), lr=1e-5)
"""


def test_rl506_advantages_from_a_value_model_with_gradient_weight_the_log_probs():
    assert lines("""
        def step(ids, returns):
            values = critic(ids).logits.squeeze(-1)
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            advantages = returns - values
            loss = -(logps * advantages).mean() - (logps * advantages).sum() + ((values - returns) ** 2).mean()
            loss.backward()
    """, "RL506", setup=VALUE) == [5]  # once, where the weight is made: the `.detach()` goes there


def test_rl506_look_alikes():
    assert lines("""
        def detached(ids, returns):
            values = critic(ids).logits.squeeze(-1)
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            (-(logps * (returns - values.detach())).mean() + ((values - returns) ** 2).mean()).backward()

        def no_grad(ids, returns):
            with torch.no_grad():
                values = critic(ids).logits.squeeze(-1)
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            (-(logps * (returns - values)).mean()).backward()

        def received_frozen(ids, returns, value_model):
            value_model.requires_grad_(False)
            values = value_model(ids).logits.squeeze(-1)
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            (-(logps * (returns - values)).mean()).backward()

        def received_from_a_caller(ids, returns, value_model):
            values = value_model(ids).logits.squeeze(-1)
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            (-(logps * (returns - values)).mean()).backward()

        def loop(loader, value_model):
            value_model.requires_grad_(False)  # frozen by the caller, under another name
            for ids, returns in loader:
                received_from_a_caller(ids, returns, value_model)

        def scored(ids, returns, reward_fn):
            rewards = reward_fn(ids)[:, -1]  # called on token ids and fitted by nothing: a reward function may be
            logps = policy(ids).logits.log_softmax(-1).sum(-1)
            (-(logps * (returns - rewards)).mean()).backward()
    """, "RL506", setup=VALUE) == []


def test_rl506_a_received_value_model_nothing_in_the_project_freezes_or_runs():
    # methods of a class nobody builds; a function that returns the loss for code out of the project to backpropagate
    assert found("""
        class Learner:
            def __init__(self, value_model):
                self.value_model = value_model

            def step(self, ids, returns):
                values = self.value_model(input_ids=ids).logits.squeeze(-1)
                logps = policy(ids).logits.log_softmax(-1).sum(-1)
                (-(logps * (returns - values)).mean()).backward()

        def actor_critic_loss(actor, critic, ids, actions, returns):
            logps = F.log_softmax(actor(ids).logits, dim=-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1)
            values = critic(ids, ids.ne(0))[:, :-1]
            return -(logps * (returns - values)).mean() + F.mse_loss(values, returns)
    """, "RL506", setup=VALUE) == [
        (9, f"`(returns - values)` carries gradient from `self.value_model(input_ids=ids)` into the policy loss "
            f"backpropagated on line {9 + VALUE.count(chr(10))}: the actor loss trains that model too "
            f"(detach it first)"),
        (14, f"`(returns - values)` carries gradient from `critic(ids, ids.ne(0))` into the policy loss backpropagated "
             f"on line {14 + VALUE.count(chr(10))} (it is returned there for its caller to backpropagate): the actor "
             f"loss trains that model too (detach it first)")]


def test_rl501_two_loads_through_another_module_s_helper_are_two_objects(tmp_path):
    """`load(name)` called twice builds two models, though one node of the helper builds both; a helper that
    hands back the model it is given (`prepare(policy)`) keeps it the same object."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(textwrap.dedent("""
        from transformers import AutoModelForCausalLM

        def load(name):
            model = AutoModelForCausalLM.from_pretrained(name)
            return model, name

        def reference(name, beta):
            if not beta:
                return None
            ref, _ = load(name)
            return ref.eval()

        def prepare(model):
            return model.train()
    """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        from trl import PPOTrainer
        from models import load, prepare, reference

        policy, _ = load("Qwen/Qwen2.5-0.5B")
        anchor = reference("Qwen/Qwen2.5-0.5B", 0.05)
        PPOTrainer(config, model=policy, ref_model=anchor)
        PPOTrainer(config, model=policy, ref_model=prepare(policy))
    """))
    result = lint_files([str(tmp_path / "train.py")], Settings(select=["RL501"]))
    assert [d.line for d in result.diagnostics] == [8]


AGENT = """
import torch
from transformers import AutoModelForCausalLM

class Agent(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        self.lm = AutoModelForCausalLM.from_pretrained(name)
        self.value = torch.nn.Linear(896, 1)

    def forward(self, ids):
        hidden = self.lm(ids, output_hidden_states=True)
        return hidden.logits, self.value(hidden.hidden_states[-1]).squeeze(-1)

    def score(self, ids, actions):
        logits, values = self.forward(ids)
        return logits.log_softmax(-1).gather(-1, actions.unsqueeze(-1)).squeeze(-1), values

def train(batches):
    agent = Agent("Qwen/Qwen2.5-0.5B")
    {anchor}
    opt = torch.optim.Adam(agent.parameters(), lr=1e-6)
    for ids, actions, adv in batches:
        logps, values = agent.score(ids, actions)
        loss = -(logps * adv).mean() + {kl}
        loss.backward()
        opt.step()
"""


def test_rl502_the_models_a_trained_module_holds_train_with_it_and_a_separate_reference_does_not():
    """`Adam(agent.parameters())` trains `agent.lm` too: its forward inside the agent's method is the policy's.
    A reference loaded beside it and run with gradient is still reported."""
    quiet = AGENT.format(anchor="", kl="0.0")
    assert lines(quiet, "RL502", setup="") == []
    loud = AGENT.format(anchor='ref = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")',
                        kl="0.1 * (logps - ref(ids).logits.log_softmax(-1).mean(-1)).mean()")
    assert lines(loud, "RL502", setup="") == [25]


def test_rl502_a_helper_is_judged_per_call():
    """The same log-prob helper runs a probe in one place and the step's forwards in another: the probe's run
    reaches no loss, whatever the step's run of the same helper does."""
    source = """
        model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")

        def logps(m, ids):
            return m(ids).logits.log_softmax(-1)

        print(logps(model, ids).mean())

        class Learner:
            def __init__(self, policy, optimizer):
                self.policy, self.optimizer = policy, optimizer

            def update(self, ids):
                loss = -logps(m=self.policy, ids=ids).mean()
                loss.backward()
                self.optimizer.step()
    """
    assert lines(source, "RL502") == []
    assert lines(source, "RL502", select=["RL502"]) == [7]


def test_rl502_a_reference_whose_number_reaches_the_loss_is_in_the_step():
    """`.item()` cuts the reference's graph, but its forward ran for the loss the step backpropagates (RL503's
    business is the cut; RL502's the activations the forward kept)."""
    assert lines("""
        policy = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        reference = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
        optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-6)

        def logps(m, ids):
            return m(ids).logits.log_softmax(-1)

        def step(ids):
            new = logps(policy, ids)
            penalty = (new - logps(reference, ids)).mean().item()
            print(logps(reference, ids).mean())
            (-new.mean() + 0.1 * penalty).backward()
            optimizer.step()
    """, "RL502") == [11]


@pytest.mark.parametrize("run", ["latent(ids)", "latent.encode(ids)"])
def test_rl502_a_model_whose_submodule_the_optimizer_trains_is_trained(run):
    """`AdamW(latent.proj.parameters())` trains part of `latent`: its forward (or a method that runs its layers) is
    the graph the loss needs, the frozen backbone inside it a part of that pass, not another model's forward:
    wrapping either in no_grad would cut every gradient."""
    source = """
        import torch
        from torch import nn
        from transformers import AutoModelForCausalLM


        class Latent(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.backbone = AutoModelForCausalLM.from_pretrained(name).requires_grad_(False)
                self.proj = nn.Linear(896, 896)

            def forward(self, ids):
                return self.encode(ids)

            def encode(self, ids):
                hidden = self.backbone(ids, output_hidden_states=True).hidden_states[-1]
                return self.proj(hidden)


        def train(batches):
            latent = Latent("Qwen/Qwen2.5-0.5B")
            opt = torch.optim.AdamW(latent.proj.parameters(), lr=1e-4)
            for ids, target in batches:
                loss = ((RUN - target) ** 2).mean()
                loss.backward()
                opt.step()
    """
    assert lines(source.replace("RUN", run), "RL502", select=["RL502"], setup="") == []
