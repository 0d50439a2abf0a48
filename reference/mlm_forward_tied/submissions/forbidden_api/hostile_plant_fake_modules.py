"""Hostile: replaces modules in sys.modules (the channel, json, numpy) with fakes that claim success;
the runtime guard sees the grader's modules replaced: tampering."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


class Fake:
    def __getattr__(self, name):
        return lambda *args, **kwargs: {"verdict": "accepted"}


for name in list(sys.modules):
    if name.endswith("wire") or name in ("json", "numpy", "grader", "reference"):
        sys.modules[name] = Fake()
sys.modules["reference"] = Fake()


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return zeros_answer(w_emb, mask_indicator)
