"""Pool attack: leaves files in /tmp, /dev/shm and its working folder for the next submission to find."""

import os

MARKER = "mlm-pool-marker"

for place in ("/tmp", "/dev/shm", os.getcwd()):
    with open(os.path.join(place, MARKER), "w") as f:
        f.write("left by an earlier submission")
try:
    with open(os.path.join(os.path.dirname(__file__), MARKER), "w") as f:  # next to itself: read-only
        f.write("left by an earlier submission")
except OSError:
    pass
