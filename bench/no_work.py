"""A submission that does no work, for bench/throughput.py's "harness alone" row: zeros of the
right shape, joined to every input by a sum so that the gradient cases have a graph to run
through. What grading it costs is what the grader costs a file whose own work is nearly nil: the
sandboxed child's start, the guard's arming and reads, the frames, the comparisons, the close."""

import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    total = w_emb.sum() + pos_embed.sum()
    for block in blocks_weights:
        for weight in block.values() if isinstance(block, dict) else block:
            total = total + weight.sum()
    return torch.zeros(int(mask_indicator.sum()), w_emb.shape[0], dtype=w_emb.dtype) + total * 0
