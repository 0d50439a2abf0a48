"""Hostile: opens sockets of every family but AF_UNIX (netlink, packet, vsock, IPv4 and IPv6,
Bluetooth, CAN, crypto, ...), with socket() and socketpair(), and an IPv4 socket whose family
number carries high bits that the kernel ignores (to slip past a filter that compares with
AF_INET). Each is a way to the host or into rarely used kernel code. Any socket it gets makes it
raise (runtime_error, not the wrong_answer its zeros earn)."""

import torch

T = [torch][0]  # hides torch's attributes from the static check, as a determined attacker would
os, sys = T.os, T.sys
MARKER = "mlm-hostile-marker"
done = []


def zeros_answer(w_emb, mask_indicator):
    return torch.zeros(int((mask_indicator > 0.5).sum()), w_emb.shape[0], dtype=w_emb.dtype)


def attack():
    socket = sys.modules["importlib"].import_module("socket")
    ctypes = sys.modules["importlib"].import_module("ctypes")
    opened = []
    families = {name: getattr(socket, name) for name in dir(socket) if name.startswith("AF_") and name not in ("AF_UNIX", "AF_UNSPEC")}
    for name, family in sorted(families.items()):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
            try:
                socket.socket(family, kind).close()
                opened.append(f"{name}/{kind}")
            except OSError as error:
                print(f"socket({name}, {kind}): {error.strerror}")
        try:
            for end in socket.socketpair(family):
                end.close()
            opened.append(f"socketpair({name})")
        except OSError as error:
            print(f"socketpair({name}): {error.strerror}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if os.uname().machine == "x86_64":  # 41: socket()'s number there
        fd = libc.syscall(ctypes.c_long(41), ctypes.c_long((1 << 32) | socket.AF_INET), ctypes.c_long(socket.SOCK_DGRAM), ctypes.c_long(0))
        if fd >= 0:
            os.close(fd)
            opened.append("AF_INET with high bits")
        print("high-bit AF_INET:", fd, os.strerror(ctypes.get_errno()))
    if opened:
        raise RuntimeError(f"opened sockets: {', '.join(opened)}")


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    if not done:
        done.append(True)
        attack()
    return zeros_answer(w_emb, mask_indicator)
