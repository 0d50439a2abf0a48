"""Compile error: inconsistent indentation."""

import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    x = w_emb[input_ids]
      return x
