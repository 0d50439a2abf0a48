"""The hidden reference for the tied-head MLM forward pass (never shipped to candidates)."""

from reference.mlm import mlm_forward_tied

__all__ = ["mlm_forward_tied"]
