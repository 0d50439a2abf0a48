"""Pool attack: looks for what an earlier submission left in /tmp, /dev/shm, its working folder
and its own folder; fails the grading if it finds anything."""

import os

found = [f"{place}: {sorted(os.listdir(place))}" for place in ("/tmp", "/dev/shm", os.getcwd(), os.path.dirname(__file__))]
found = [entry for entry in found if "mlm-pool-marker" in entry]
if found:
    raise RuntimeError(f"found what another submission left: {found}")
