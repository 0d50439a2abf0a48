"""Hostile: at import, stops reading the grader's requests while keeping the pipe open, and fills
the pipe, so that the grader's first write of a case would block forever."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
json = sys.modules["json"]
MARKER = "mlm-hostile-marker"

requests = json.loads(sys.argv[-1])["request_fd"]
kept = os.dup(requests)  # the request pipe stays open, but nobody reads it any more
idle_read, idle_write = os.pipe()
os.dup2(idle_read, requests)  # the runner now waits on a pipe nobody writes
filler = os.open(f"/proc/self/fd/{kept}", os.O_WRONLY | os.O_NONBLOCK)  # and what is left of the request pipe is filled
try:
    while True:
        os.write(filler, bytes(4096))
except BlockingIOError:
    pass


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)
