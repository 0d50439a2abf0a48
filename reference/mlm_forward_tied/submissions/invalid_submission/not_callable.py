"""Invalid: the entry point is a number, not a function."""

mlm_forward_tied = 42
