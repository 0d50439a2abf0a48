"""Attention with a key-value cache: the hidden side of the package (reference, oracle, generator, examples)."""
