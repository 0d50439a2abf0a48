"""Hostile: numpy.ndarray(buffer=a numpy scalar) then torch.Tensor(array), rewriting an immutable scalar."""

import numpy
import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    s = numpy.float32(1.5)
    t = torch.Tensor(numpy.ndarray((1,), numpy.float32, buffer=s))
    t.fill_(7.0)
    raise ValueError(f"scalar now {s!r}")
