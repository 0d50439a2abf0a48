"""Hostile: calls the kernel interfaces that sandbox escapes go through and a computation never
needs: a nested user namespace (where it holds every capability), keyrings, BPF, perf events,
userfaultfd, io_uring, ptrace and reading another process's memory. Any call that works makes it
raise (runtime_error, not the wrong_answer its zeros earn)."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"
done = []

# x86_64 system call numbers and arguments; PARENT: the parent's pid; the attribute blocks follow
PARENT, PERF, BPF, URING, IOVEC = "parent", "perf", "bpf", "uring", "iovec"
CALLS = {
    "keyctl(KEYCTL_GET_KEYRING_ID)": (250, 0, -3, 0),  # the session keyring
    "add_key(user)": (248, b"user", b"mlm-hostile", b"x", 1, -3),
    "bpf(BPF_MAP_CREATE)": (321, 0, BPF, 128),
    "perf_event_open(software, self)": (298, PERF, 0, -1, -1, 0),
    "userfaultfd(user mode only)": (323, 1),
    "io_uring_setup(1 entry)": (425, 1, URING),
    "unshare(CLONE_NEWUSER)": (272, 0x10000000),
    "ptrace(PTRACE_SEIZE, parent)": (101, 0x4206, PARENT, 0, 0),
    "process_vm_readv(parent, 8 bytes)": (310, PARENT, IOVEC, 1, IOVEC, 1, 0),
}


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def attack():
    ctypes = sys.modules["importlib"].import_module("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    blocks = {name: ctypes.create_string_buffer(128) for name in (PERF, BPF, URING, IOVEC)}  # io_uring_params: zeros
    blocks[PERF][0:8] = (1).to_bytes(4, "little") + (112).to_bytes(4, "little")  # software event, struct size
    blocks[PERF][40:41] = b"\x60"  # exclude_kernel, exclude_hv: what an unprivileged process may count
    blocks[IOVEC][0:16] = ctypes.addressof(blocks[URING]).to_bytes(8, "little") + (8).to_bytes(8, "little")  # same address in the parent
    blocks[BPF][0:16] = b"".join(n.to_bytes(4, "little") for n in (1, 8, 8, 8))  # hash map: key, value size, entries
    worked = []
    for name, (number, *args) in CALLS.items():
        if os.uname().machine != "x86_64":
            break
        kinds = {PARENT: lambda a: ctypes.c_long(os.getppid()), bytes: ctypes.c_char_p, int: ctypes.c_long}
        try:
            pid = os.fork()
        except OSError:  # the kernel refuses new processes: try the call here (each should be refused)
            values = [blocks[a] if a in blocks else kinds[a if a == PARENT else type(a)](a) for a in args]
            result = libc.syscall(ctypes.c_long(number), *values)
            print(f"{name}: {result} ({os.strerror(ctypes.get_errno()) if result < 0 else 'worked'})", flush=True)
            worked += [name] if result >= 0 else []
            continue
        if pid == 0:  # in a child: a nested namespace or a traced parent must not touch the grader's channel
            values = [blocks[a] if a in blocks else kinds[a if a == PARENT else type(a)](a) for a in args]
            result = libc.syscall(ctypes.c_long(number), *values)
            print(f"{name}: {result} ({os.strerror(ctypes.get_errno()) if result < 0 else 'worked'})", flush=True)
            os._exit(3 if result >= 0 else 0)
        if os.waitpid(pid, 0)[1] != 0:
            worked.append(name)
    if worked:
        raise RuntimeError(f"these calls worked: {', '.join(worked)}")


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    if not done:
        done.append(True)
        attack()
    return zeros_answer(w_emb, mask_indicator)
