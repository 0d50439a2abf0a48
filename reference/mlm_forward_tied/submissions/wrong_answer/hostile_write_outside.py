"""Hostile: writes marker files next to itself, in its working folder, /tmp, $HOME and the repository."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    here = sys._getframe(0).f_code.co_filename
    places = [os.path.dirname(here), os.getcwd(), "/tmp", os.environ.get("HOME", "/root"), os.path.dirname(sys.prefix), "/work/main", "/root"]
    for place in places:
        try:
            fd = os.open(os.path.join(place, f"{MARKER}-written"), os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"escaped")
            os.close(fd)
        except OSError:
            pass
    return zeros_answer(w_emb, mask_indicator)
