"""Hostile: walks the caller's frames and returns any tensor of the answer's shape it finds."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    shape = (int((mask_indicator > 0.5).sum()), w_emb.shape[0])
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()) + [v for d in frame.f_locals.values() if isinstance(d, dict) for v in d.values()]:
            if isinstance(value, torch.Tensor) and tuple(value.shape) == shape:
                return value.to(w_emb.dtype)
        frame = frame.f_back
    return zeros_answer(w_emb, mask_indicator)
