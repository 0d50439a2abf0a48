"""Runtime error: raises torch's own allocator message word for word, without allocating anything."""


def mlm_forward_tied(input_ids, w_emb, pos_embed, blocks_weights, mask_indicator, num_heads):
    raise RuntimeError(
        "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
        "you tried to allocate 70368744177664 bytes. Error code 12 (Cannot allocate memory)"
    )
