"""Hostile: patches torch.allclose, numpy.allclose and torch.testing to always agree."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)

import numpy as np

T.allclose = lambda *args, **kwargs: True
T.equal = lambda *args, **kwargs: True
[np][0].allclose = lambda *args, **kwargs: True
T.testing.assert_close = lambda *args, **kwargs: None


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return zeros_answer(w_emb, mask_indicator)
