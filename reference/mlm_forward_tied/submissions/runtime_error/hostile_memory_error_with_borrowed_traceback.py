"""Hostile: raises torch's allocator message with the traceback of a real failure of a call
(a ValueError from int()), so that its innermost frame is at a call, not at a raise."""

MESSAGE = (
    "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
    "you tried to allocate 70368744177664 bytes. Error code 12 (Cannot allocate memory)"
)


def fail_in_a_call():
    return int("not a number")


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    try:
        fail_in_a_call()
    except ValueError as error:
        borrowed = error.__traceback__
    raise RuntimeError(MESSAGE).with_traceback(borrowed)
