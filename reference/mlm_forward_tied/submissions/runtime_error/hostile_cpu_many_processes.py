"""Hostile: forks six busy processes, each under the CPU limit of one process, that together use far
more CPU time than the limit of the whole run. Under bubblewrap the kernel refuses every new process
(seccomp), so it fails at its first fork: runtime_error. Where a backend lets it fork (uid, process),
the CPU time of all its processes together is what ends it (tests/test_cpu_accounting.py and the
watchdog tests in tests/test_protocol.py)."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
time = sys.modules["time"]
MARKER = "mlm-hostile-marker"
WORKERS = 6
SECONDS_EACH = 4.0  # of CPU time: under a limit of 6 s for one process, 24 s for all six


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    workers = []
    for _ in range(WORKERS):
        pid = os.fork()
        if pid == 0:
            while time.process_time() < SECONDS_EACH:
                pass
            os._exit(0)
        workers.append(pid)
    for pid in workers:
        os.waitpid(pid, 0)
    return zeros_answer(w_emb, mask_indicator)
