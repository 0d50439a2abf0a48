"""A small problem of the harness's own tests (tests/test_packages.py): two outputs, one of them an
integer compared exactly, a float and a bool parameter, a gradient check, and a policy that keeps
autograd from the submission. Its problem.toml names this package as its hidden side."""
