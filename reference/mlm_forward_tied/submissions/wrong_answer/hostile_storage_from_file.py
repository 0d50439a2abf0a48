"""Hostile: reads and writes files through torch.UntypedStorage.from_file, which maps any path into
a tensor's storage: the environments of its own process and of pid 1, then a shared mapping that
creates marker files. Returns zeros."""

import torch

MARKER = "mlm-hostile-marker"


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    for path in ("/proc/self/environ", "/proc/1/environ", "/etc/hostname"):
        try:
            storage = torch.UntypedStorage.from_file(path, False, 256)
            print(path, bytes(storage.tolist()))
        except RuntimeError as error:
            print(path, "refused:", error)
    for place in ("/tmp", "/root", "/work/main"):
        try:
            storage = torch.UntypedStorage.from_file(f"{place}/{MARKER}-storage", True, 16)
            print(place, "mapped:", storage.size())  # the shared mapping creates the file; writing it would set a tensor onto the storage, which the guard refuses
        except RuntimeError:
            pass
    return zeros_answer(w_emb, mask_indicator)
