"""Runtime error: raises a RuntimeError whose message says it ran out of memory; the words are the
submission's own, so they choose no verdict (only an allocation failure is memory_limit_exceeded)."""


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB; can't allocate memory: not enough memory")
