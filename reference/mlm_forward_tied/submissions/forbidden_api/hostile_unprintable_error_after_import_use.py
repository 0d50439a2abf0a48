"""Hostile: while being imported, calls the built-in softmax and catches the refusal, then ends the
import with an exception whose str() raises, hoping the runner fails while it describes the
exception and ends before it tells the forbidden use (a runtime error instead)."""

import torch


class Unprintable(BaseException):
    def __str__(self):
        raise Unprintable()


try:
    torch.softmax(torch.ones(3), dim=0)
except Exception:
    pass


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


raise Unprintable()
