"""Hostile: forges an error reply whose text is a list, where the grader expects a string."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
json, struct = sys.modules["json"], sys.modules["struct"]
MARKER = "mlm-hostile-marker"


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
    """One frame written straight into the grader's result channel (its number is in the child's argv)."""
    channel = json.loads(sys.argv[-1])["result_fd"]
    os.write(channel, struct.pack("<Q", len(header)) + header + payload)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    header = {"kind": "result", "name": running_case(), "phase": "forward", "error": ["Traceback", "..."], "memory": False, "tensors": []}
    send_raw(json.dumps(header).encode())
    return zeros_answer(w_emb, mask_indicator)
