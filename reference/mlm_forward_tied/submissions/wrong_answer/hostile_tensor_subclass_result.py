"""Hostile: returns a tensor subclass whose pickling and torch-function hooks try to run a command."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


class Trojan(torch.Tensor):
    def __reduce_ex__(self, protocol):
        return (os.system, (f"touch /tmp/{MARKER}-subclass",))

    def __getstate__(self):
        os.system(f"touch /tmp/{MARKER}-getstate")
        return {}


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return zeros_answer(w_emb, mask_indicator).as_subclass(Trojan)
