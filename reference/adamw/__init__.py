"""AdamW by hand: the hidden side of the package (reference, oracle, generator, examples)."""
