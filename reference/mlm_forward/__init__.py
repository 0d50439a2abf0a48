"""The hidden side of the untied-head MLM challenge (problem/mlm-forward/): the reference, an
independent float64 oracle, the generator and example submissions. The encoder is the tied
challenge's (reference/mlm_forward_tied/), reused rather than copied."""
