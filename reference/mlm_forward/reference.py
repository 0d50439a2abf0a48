"""Masked-language-model forward pass with an untied output head: the reference.

The encoder (embedding, pre-LN blocks, no final layer norm) is the tied challenge's, imported from
reference/mlm_forward_tied/reference.py: the two challenges differ only in the head, which here is
a separate (d_model, vocab_size) matrix. Shapes in comments: N sequences, T positions, D = d_model,
V vocabulary, M masked positions. Works for float32 and float64 and is differentiable with respect
to every float input, w_head included.
"""

from torch import Tensor

from reference.mlm_forward_tied.reference import MASK_THRESHOLD, encode


def mlm_forward(
    input_ids: Tensor,
    w_emb: Tensor,
    pos_embed: Tensor,
    blocks_weights: Tensor,
    w_head: Tensor,
    mask_indicator: Tensor,
    num_heads: int,
) -> Tensor:
    """Logits (M, V) at the positions where mask_indicator > 0.5, in row-major (n, t) order."""
    hidden = encode(input_ids, w_emb, pos_embed, blocks_weights, num_heads)  # (N, T, D)
    masked = hidden[mask_indicator > MASK_THRESHOLD]  # (M, D): gather before the head
    return masked @ w_head  # untied head: its own (D, V) matrix, (in, out) like every weight
