"""Your solution: implement mlm_forward_tied. See problem/mlm-forward-tied/README.md for the full statement."""

import torch  # noqa: F401 - the tensor library you will need


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    """Return the logits at the masked positions, shape (M, vocab_size)."""
    raise NotImplementedError("write mlm_forward_tied: see the statement, problem/mlm-forward-tied/README.md")
