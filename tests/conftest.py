import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

# Test workers run side by side on few cores; multi-threaded kernels on tiny tensors would spin
# against each other (the grader and its child run single-threaded for the same reason).
DEFAULT_THREADS = torch.get_num_threads()  # a new interpreter's (tests/grading.py gives it back to a forked grader)
torch.set_num_threads(1)
