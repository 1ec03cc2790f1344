"""RL107: a cast to half precision becomes a cast to float32 (unsafe in an earlier assignment)."""
import torch
import torch.nn.functional as F


def per_token_logps(model, input_ids):
    logits = model(input_ids=input_ids).logits.to(dtype=torch.float16)
    return torch.log_softmax(logits, dim=-1)


def entropy_from_logits(logits):
    return torch.nn.functional.softmax(logits.bfloat16(), dim=-1)


def sequence_nll(hidden, lm_head, labels):
    flat = lm_head(hidden).type(torch.half)
    return F.cross_entropy(flat, labels, reduction="none")


def method_form(logits):
    return logits.half().log_softmax(-1)


def own_dtype(logits):
    return logits.log_softmax(-1, dtype=torch.bfloat16)
