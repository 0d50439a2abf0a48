"""Runtime error: raises MemoryError while it is imported; nothing failed to allocate."""

raise MemoryError("can't allocate memory")


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return None
