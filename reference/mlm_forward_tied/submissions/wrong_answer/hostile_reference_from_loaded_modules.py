"""Hostile: searches the modules loaded in its process for the reference or expected values."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    for name, module in list(sys.modules.items()):
        fn = getattr(module, "mlm_forward_tied", None)
        if callable(fn) and name != __name__ and "candidate" not in name:
            return fn(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)
        for read in (lambda m: m.expected, lambda m: m.EXPECTED, lambda m: m.reference):
            try:
                value = read(module)
            except Exception:
                continue
            if isinstance(value, torch.Tensor):
                return value
    return zeros_answer(w_emb, mask_indicator)
