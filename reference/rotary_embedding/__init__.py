"""rotary-embedding: the hidden side of the package (reference, oracle, generator, examples)."""
