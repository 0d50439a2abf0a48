"""Time limit exceeded by the submission's choice: exit status 152 reads as SIGXCPU.

bubblewrap (and the pool's init) report a child killed by signal N as 128 + N, so the grader
turns every exit status in 129..192 into "killed by signal N" (sandbox.ProcessChild.exit,
zygote.ZygoteChild.exit), and judge.classify_exit gives SIGXCPU time_limit_exceeded without looking
at the CPU time actually used. A submission that ends with os._exit(152) (128 + SIGXCPU) after
a few milliseconds of work gets time_limit_exceeded, "used more than 120 s of CPU time during
case public_tiny"; os._exit(153) gets "wrote a file larger than the limit of 16 MiB". Run with
--unrestricted (any code may end its process with any status). Should: runtime_error (the
process exited with status 152), as for any other exit status: a signal that is not backed by
the CPU time (cgroup) or the grader's own kill is not the limit's.
"""
import os


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    os._exit(152)
