"""RL108: log of a softmax becomes log_softmax (dropping an epsilon is the unsafe form)."""
import torch
import torch.nn.functional as F


def logps(logits):
    return torch.log(torch.softmax(logits, dim=-1))


def logps_method(logits):
    return logits.softmax(-1).log()


def logps_eps(logits, labels):
    picked = torch.log(F.softmax(logits, dim=-1) + 1e-8)  # the epsilon goes too
    return picked.gather(-1, labels.unsqueeze(-1))
