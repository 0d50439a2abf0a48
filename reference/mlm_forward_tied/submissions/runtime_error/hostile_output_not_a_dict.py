"""Hostile: forges a result whose output description is a string instead of an object."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
json, struct = sys.modules["json"], sys.modules["struct"]
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


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def running_case():
    """The name of the case being run, found in the runner's frames, so the forged frame passes the name check."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, dict) and value.get("kind") == "case":
                return value["name"]
        frame = frame.f_back
    return "public_tiny"


def send_raw(header: bytes, payload: bytes = b"") -> None:
    """One frame written straight into the grader's result channel (found among the child's descriptors)."""
    channel = _channel()["result_fd"]
    os.write(channel, struct.pack("<Q", len(header)) + header + payload)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    send_raw(json.dumps({"kind": "result", "name": running_case(), "output": "torch.Tensor", "tensors": []}).encode())
    return zeros_answer(w_emb, mask_indicator)
