"""A class of the file's own names a forbidden attribute in __match_args__, and a class pattern
inside a sequence pattern reads it from an item (the subject of the match is the list, not the
tensor): the attribute names are judged by themselves, whatever object reaches the pattern."""
import torch


class G(torch.Tensor):
    __match_args__ = ("untyped_storage",)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    match [w_emb.as_subclass(G)]:
        case [G(f)]:
            print("storage of", f().nbytes(), "bytes")
    return w_emb
