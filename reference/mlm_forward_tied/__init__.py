"""The hidden side of the tied-head MLM challenge: the reference, its generator and known mistakes."""
