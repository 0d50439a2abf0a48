"""Hostile: looks for the hidden reference on disk (next to the venv, the working folder, common install paths) and runs it."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def find_reference():
    roots = [os.path.dirname(sys.prefix), os.getcwd(), "/app", "/opt/grader", "/work/main", "/"]
    for root in roots:
        for found, _, names in os.walk(root):
            if "mlm.py" in names and found.endswith("reference"):
                return os.path.join(found, "mlm.py")
            if found.count(os.sep) > 4:
                break
    return None


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    path = find_reference()
    if path:
        util = sys.modules["importlib.util"]
        spec = util.spec_from_file_location("stolen_reference", path)
        module = util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads)
    return zeros_answer(w_emb, mask_indicator)
