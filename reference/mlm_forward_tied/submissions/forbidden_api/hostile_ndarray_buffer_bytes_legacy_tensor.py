"""Hostile: numpy.ndarray(buffer=bytes) then torch.Tensor(array), a writable tensor over an immutable bytes object."""

import numpy
import torch

KEY = b"ABCDEFGH"


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    data = bytes([65, 66, 67, 68, 69, 70, 71, 72])
    arr = numpy.ndarray((2,), numpy.float32, buffer=data)
    t = torch.Tensor(arr)
    t.fill_(0.0)
    raise ValueError(f"after write: {data!r} arr={arr!r}")
