"""An independent float64 implementation of the untied-head forward pass, in NumPy: the tied
challenge's oracle for the encoder and the gather (reference/mlm_forward_tied/oracle.py, written
from the statement, not from either reference), then the separate head."""

import torch
from torch import Tensor

from reference.mlm_forward_tied.oracle import encode, masked_rows


def oracle(input_ids: Tensor, w_emb: Tensor, pos_embed: Tensor, blocks_weights: Tensor, w_head: Tensor, mask_indicator: Tensor, num_heads: int) -> Tensor:
    ids, emb, pos, blocks, head, mask = (t.detach().numpy() for t in (input_ids, w_emb, pos_embed, blocks_weights, w_head, mask_indicator))
    return torch.from_numpy(masked_rows(encode(ids, emb, pos, blocks, num_heads), mask) @ head)
