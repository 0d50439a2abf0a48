"""The only code that runs inside the submission's process. It must not import anything from the
rest of the grader: this folder alone is what the child can see."""
