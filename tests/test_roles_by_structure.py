"""Issue 10 A: roles and gradient facts from how code is built and used, not from how it is spelled.

Each shape is written here in styles of its own (hand-written torch, a TRL subclass, a verl-like
worker), with its look-alikes. Lines that must be reported end with `# reported`."""
import ast
import textwrap

import libcst as cst

from rllint.analysis.grad import GradFlow
from rllint.analysis.roles import POLICY, VALUE, ModelRoles
from rllint.runner import FileContext, lint_text
from rllint.settings import Settings


def found(source: str, codes, path: str = "train.py", **options):
    result = lint_text(textwrap.dedent(source), path, Settings(select=list(codes), options=options))
    return sorted((d.line, d.code) for d in result.diagnostics)


def marked(source: str, code: str):
    return [(number, code) for number, line in enumerate(textwrap.dedent(source).splitlines(), 1)
            if line.rstrip().endswith("# reported")]


def facts(source: str, fact):
    text = textwrap.dedent(source)
    file = FileContext("train.py", text, cst.parse_module(text), ast.parse(text),
                       Settings(options={"rl-context": "always"}))
    return file.fact(fact)


# ---- 1. roles from construction and use ----

_REINFORCE = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical


class Agent(nn.Module):
    def __init__(self, n_obs, n_act):
        super().__init__()
        self.pi = nn.Sequential(nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, n_act))

    def forward(self, obs):
        return self.pi(obs)


agent = Agent(4, 2)
critic_free_baseline = nn.Linear(4, 1)
optim_pi = torch.optim.Adam(agent.parameters(), lr=3e-4)
optim_b = torch.optim.Adam(critic_free_baseline.parameters(), lr=1e-3)


def learn(obs, acts, rets):
    scores = agent(obs)
    logp = F.log_softmax(scores, dim=-1).gather(-1, acts[:, None]).squeeze(-1)
    pred = critic_free_baseline(obs).squeeze(-1)
    adv = rets - pred{detach}  # {mark}
    logp[acts < 0] = 0.0  # reported
    fit = ((pred - rets) ** 2).mean()
    optim_pi.zero_grad()
    optim_b.zero_grad()
    (-(logp * adv).mean() + fit).backward()
    optim_pi.step()
    optim_b.step()
"""


def test_a_trained_model_no_name_gives_a_role_is_the_policy_and_a_regressed_one_the_value_model():
    source = _REINFORCE.format(detach="", mark="reported")
    roles = facts(source, ModelRoles)
    assert roles.evidence == {"agent": POLICY, "critic_free_baseline": VALUE}
    advantage_line, masking_line = [number for number, _ in marked(source, "")]
    assert found(source, ["RL504", "RL506"], **{"rl-context": "always"}) == \
        [(advantage_line, "RL506"), (masking_line, "RL504")]  # RL506 where the `.detach()` goes


def test_a_detached_learned_baseline_is_not_reported():
    source = _REINFORCE.format(detach=".detach()", mark="fine")
    assert found(source, ["RL506"], **{"rl-context": "always"}) == []


def test_two_unnamed_trained_models_give_no_policy():
    """A generator and a discriminator, both trained, neither regressed: the evidence is mixed, no role."""
    source = """
        import torch
        import torch.nn as nn

        gen, disc = nn.Linear(8, 8), nn.Linear(8, 1)
        opt_g = torch.optim.Adam(gen.parameters())
        opt_d = torch.optim.Adam(disc.parameters())

        def step(z):
            fake = gen(z)
            fake[fake < 0] = 0.0
            loss = -disc(fake).mean()
            loss.backward()
            opt_g.step()
    """
    assert facts(source, ModelRoles).evidence == {}
    assert found(source, ["ALL"], **{"rl-context": "always"}) == []  # masking a linear output: harmless


def test_a_named_policy_leaves_other_trained_models_without_a_role():
    source = """
        import torch

        def setup(policy, scorer_head):
            return torch.optim.AdamW(list(policy.parameters()) + list(scorer_head.parameters()))
    """
    assert facts(source, ModelRoles).evidence == {}


def test_trained_models_of_non_rl_code_have_no_role():
    """An SFT loop trains `net`: without RL code there is no policy, and in-place ops are not reported."""
    source = """
        import torch
        import torch.nn.functional as F

        net = torch.nn.Linear(16, 100)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)

        def sft_step(x, y):
            logits = net(x)
            logits[:, 0] = -1e9
            F.cross_entropy(logits, y).backward()
            opt.step()
    """
    assert found(source, ["RL504"]) == []


def test_a_trainer_given_the_policy_as_its_reference_by_keyword():
    source = """
        from trl import DPOConfig, DPOTrainer
        from transformers import AutoModelForCausalLM

        def main(name, data, peft_config=None):
            lm = AutoModelForCausalLM.from_pretrained(name)
            DPOTrainer(model=lm, ref_model=lm, args=DPOConfig(beta=0.1), train_dataset=data).train()  # reported
            DPOTrainer(model=lm, ref_model=None, args=DPOConfig(beta=0.1), train_dataset=data).train()
            frozen = AutoModelForCausalLM.from_pretrained(name).requires_grad_(False)
            DPOTrainer(model=lm, ref_model=frozen, args=DPOConfig(beta=0.1), train_dataset=data).train()
            if peft_config is not None:
                DPOTrainer(model=lm, ref_model=lm, peft_config=peft_config, train_dataset=data).train()
    """
    assert found(source, ["RL501"]) == marked(source, "RL501")


def test_a_verl_like_worker_passing_its_actor_as_the_reference():
    source = """
        from trl import PPOTrainer

        class Worker:
            def init_model(self, config, actor, tokenizer):
                self.actor = actor
                self.trainer = PPOTrainer(config, policy=self.actor, ref_policy=self.actor,  # reported
                                          processing_class=tokenizer)
                self.other = PPOTrainer(config, policy=self.actor, ref_policy=self.ref_actor)
    """
    assert found(source, ["RL501"]) == marked(source, "RL501")


# ---- 2. values through helpers ----

def test_a_helper_runs_its_model_whatever_its_parameter_is_called():
    source = """
        import torch
        from transformers import AutoModelForCausalLM

        agent = AutoModelForCausalLM.from_pretrained("gpt2")
        opt = torch.optim.AdamW(agent.parameters(), lr=1e-6)

        def seq_logprobs(m, toks):
            out = m(input_ids=toks).logits[:, :-1].log_softmax(-1)
            return out.gather(-1, toks[:, 1:, None]).squeeze(-1)

        def frozen_logprobs(m, toks):
            with torch.no_grad():
                out = m(input_ids=toks).logits[:, :-1].log_softmax(-1)
            return out.gather(-1, toks[:, 1:, None]).squeeze(-1)

        def update(toks, old, adv):
            lp = seq_logprobs(agent, toks)
            lp[toks[:, 1:] == 0] = 0.0  # reported
            base = frozen_logprobs(agent, toks)
            base[toks[:, 1:] == 0] = 0.0
            loss = -(torch.exp(lp - old) * adv).mean()
            loss.backward()
            opt.step()
    """
    assert found(source, ["RL504"], **{"rl-context": "always"}) == marked(source, "RL504")


def test_a_helper_under_no_grad_cuts_the_loss():
    source = """
        import torch

        def seq_logprobs(m, toks):
            return m(input_ids=toks).logits.log_softmax(-1)

        def update(generator, toks, old_lp, adv, opt):
            with torch.no_grad():
                old_lp = seq_logprobs(generator, toks)
                lp = seq_logprobs(generator, toks)  # reported
            loss = -(torch.exp(lp - old_lp) * adv).mean()
            loss.backward()
            opt.step()

        opt = torch.optim.Adam(generator.parameters())
    """
    assert found(source, ["RL505"], **{"rl-context": "always"}) == marked(source, "RL505")


def test_an_inherited_helper_of_a_trl_subclass():
    source = """
        import torch
        from trl import GRPOTrainer

        class Scored(GRPOTrainer):
            def _token_logps(self, net, ids, mask, keep):
                logits = net(input_ids=ids, attention_mask=mask).logits[:, -keep - 1:-1]
                return torch.gather(logits.log_softmax(-1), -1, ids[:, -keep:, None]).squeeze(-1)

        class Clipped(Scored):
            def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                logps = self._token_logps(model, inputs["ids"], inputs["mask"], 8)
                logps.masked_fill_(inputs["pad"], 0.0)  # reported
                return -(torch.exp(logps - logps.detach()) * inputs["advantages"]).mean()
    """
    assert found(source, ["RL504"]) == marked(source, "RL504")


def test_a_verl_like_worker_whose_trained_module_runs_through_a_micro_batch_helper():
    source = """
        import torch
        from torch import optim

        class ActorWorker:
            def build(self, module_fsdp, lr):
                self.module_fsdp = module_fsdp
                self.optimizer = optim.AdamW(self.module_fsdp.parameters(), lr=lr)

            def _forward_micro_batch(self, module, micro_batch, temperature):
                logits = module(input_ids=micro_batch["input_ids"]).logits
                logits = logits / temperature
                return logits.log_softmax(-1).gather(-1, micro_batch["responses"].unsqueeze(-1)).squeeze(-1)

            def update_policy(self, data):
                log_prob = self._forward_micro_batch(self.module_fsdp, data, 1.0)
                log_prob.mul_(data["response_mask"])  # reported
                ratio = torch.exp(log_prob - data["old_log_probs"])
                loss = -(ratio * data["advantages"]).mean()
                loss.backward()
                self.optimizer.step()
    """
    assert found(source, ["RL504"], **{"rl-context": "always"}) == marked(source, "RL504")


def test_helper_summaries_say_which_parameters_run_with_gradient():
    grad = facts("""
        import torch

        def with_grad(m, x):
            return m(input_ids=x).logits

        def without(m, x):
            with torch.no_grad():
                return m(input_ids=x).logits

        def use(policy, x):
            return with_grad(policy, x), without(policy, x)
    """, GradFlow)
    by_name = {f.name.value: s for f, s in grad.summaries.items()}
    assert by_name["with_grad"].runs_with_grad("m") and not by_name["with_grad"].runs_with_grad("x")
    assert not by_name["without"].runs_with_grad("m")


def test_torch_tensor_rewrapping_a_loss_value():
    source = """
        import torch
        from transformers import AutoModelForCausalLM

        policy = AutoModelForCausalLM.from_pretrained("gpt2")
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)

        def step(batch):
            logps = policy(batch["input_ids"]).logits.log_softmax(-1)
            ratio = torch.exp(logps - batch["old_logps"])
            surrogate = -(ratio * batch["advantages"]).mean()
            weights = torch.tensor(batch["weights"], dtype=torch.float32)
            loss = torch.tensor(surrogate, requires_grad=True) * weights.mean()  # reported
            loss.backward()
            scale = torch.tensor(ratio.mean().item())  # reported
            (scale * surrogate).backward()
            opt.step()
    """
    assert [line for line, _ in found(source, ["RL503"], **{"rl-context": "always"})] == \
        [line for line, _ in marked(source, "RL503")]


# ---- 3. clip bounds by structure ----

def test_clip_bounds_are_judged_by_how_they_are_built():
    source = """
        import torch

        def surrogate(lp, old, adv, delta, cfg):
            rho = torch.exp(lp - old)
            bare = torch.clamp(rho, delta, 1 + delta)  # reported
            bare_upper = rho.clamp(1 - cfg.tau, cfg.tau)  # reported
            lo = 1 - delta
            built = torch.clamp(rho, lo, 1 + delta)
            eps_low, eps_high = 1 - delta, 1 + delta
            named_like_ranges = torch.clamp(rho, eps_low, eps_high)
            asymmetric = torch.clamp(rho, 1 - cfg.tau, 1 + cfg.tau_high)
            return bare, bare_upper, built, named_like_ranges, asymmetric
    """
    assert found(source, ["RL507"], **{"rl-context": "always"}) == marked(source, "RL507")


def test_a_clip_range_used_elsewhere_in_the_file_is_a_bare_bound():
    source = """
        import torch

        class Objective:
            def __call__(self, lp, old, adv):
                ratio = torch.exp(lp - old)
                kept = torch.clamp(ratio, 1 - self.width, 1 + self.width)
                loose = torch.clamp(ratio, self.width, 1 + self.width_high)  # reported
                return -torch.min(ratio * adv, kept * adv).mean() + loose.mean()

        def unrelated(ratio, floor, ceiling):
            return torch.clamp(ratio, floor, ceiling)
    """
    assert found(source, ["RL507"], **{"rl-context": "always"}) == marked(source, "RL507")


# ---- 4. exemptions read from the right place ----

def test_label_smoothing_spares_only_the_flipped_term():
    source = """
        import torch.nn.functional as F

        def smoothed(chosen_logps, rejected_logps, ref_chosen, ref_rejected, beta, flip):
            margin = (chosen_logps - ref_chosen) - (rejected_logps - ref_rejected)
            main = (1 - flip) * -F.logsigmoid(-beta * margin)  # reported
            return main - flip * F.logsigmoid(beta * margin)

        def smoothed_ok(chosen_logps, rejected_logps, ref_chosen, ref_rejected, beta, p):
            margin = (chosen_logps - ref_chosen) - (rejected_logps - ref_rejected)
            return (1 - p) * -F.logsigmoid(beta * margin) + p * -F.logsigmoid(-beta * margin)

        def smoothed_softplus(chosen_logps, rejected_logps, beta, label_smoothing):
            z = beta * (chosen_logps - rejected_logps)
            return F.softplus(z) * (1 - label_smoothing) + F.softplus(-z) * label_smoothing  # reported
    """
    assert found(source, ["RL102"], **{"rl-context": "always"}) == marked(source, "RL102")


def test_a_helper_running_policy_and_reference_is_reported_at_its_reference_forward():
    source = """
        import torch
        from transformers import AutoModelForCausalLM

        policy = AutoModelForCausalLM.from_pretrained("gpt2")
        ref_model = AutoModelForCausalLM.from_pretrained("gpt2")
        opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)

        def pair_loss(batch, pi, anchor):
            lp = pi(batch["input_ids"]).logits.log_softmax(-1)
            alp = anchor(batch["input_ids"]).logits.log_softmax(-1)  # reported
            return ((lp - alp) * batch["advantages"]).mean()

        def pair_loss_ok(batch, pi, anchor):
            lp = pi(batch["input_ids"]).logits.log_softmax(-1)
            with torch.no_grad():
                alp = anchor(batch["input_ids"]).logits.log_softmax(-1)
            return ((lp - alp) * batch["advantages"]).mean()

        def ref_only(batch, anchor):
            return anchor(batch["input_ids"]).logits.log_softmax(-1)

        def train(loader):
            for batch in loader:
                loss = pair_loss(batch, policy, ref_model) + pair_loss(batch, policy, ref_model)
                loss = loss + pair_loss_ok(batch, policy, ref_model)
                ref = ref_only(batch, ref_model)  # reported
                (loss + ref.mean()).backward()
                opt.step()
    """
    assert found(source, ["RL502"], **{"rl-context": "always"}) == marked(source, "RL502")
