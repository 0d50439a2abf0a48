"""A keyword class pattern reads an attribute inside the interpreter: torch.Tensor(untyped_storage=f)
would hand the file a tensor's raw storage (the static check names it; without it, the capability
layer judges every attribute a class pattern reads before the match)."""
import torch


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    match w_emb:
        case torch.Tensor(untyped_storage=f):
            print("storage of", f().nbytes(), "bytes")
    return w_emb
