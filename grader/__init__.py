"""Auto-grader for the tied-head MLM forward pass. Run it as `python -m grader SUBMISSION`."""

__version__ = "0.1.0"
