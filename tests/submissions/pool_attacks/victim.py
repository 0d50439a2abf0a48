"""Pool attack, the victim: keeps a secret in its private /tmp and in its own source
(VICTIM-SECRET-7183), and stays a few seconds at import so that a spy graded beside it can look."""

import time

SECRET = "VICTIM-SECRET-" + "7183"
with open("/tmp/victim-secret", "w") as f:
    f.write(SECRET)
time.sleep(4)
