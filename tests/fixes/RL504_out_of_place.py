"""RL504: in-place edits of tensors that carry gradient, rebound out of place."""
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

actor = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")
optimizer = torch.optim.AdamW(actor.parameters(), lr=1e-6)


def ppo_loss(batch, clip=0.2):
    logps = F.log_softmax(actor(batch["input_ids"]).logits.float(), dim=-1)
    logps = logps.gather(-1, batch["labels"].unsqueeze(-1)).squeeze(-1)
    ratio = (logps - batch["old_logps"]).exp()
    ratio[batch["mask"] == 0] *= 0.0
    logps[~batch["mask"]] = 0.0
    ratio.clamp_(min=0.0, max=10.0)
    loss = -(ratio * batch["advantages"]).mean()
    loss.backward()
    return logps
