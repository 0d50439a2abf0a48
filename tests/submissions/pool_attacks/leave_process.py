"""Pool attack: tries to leave a process behind (a fork, a daemon through subprocess), to outlive its grading."""

import os
import subprocess

try:
    if os.fork() == 0:
        os.setsid()
        os.execv("/bin/sleep", ["sleep", "4242"])
except OSError:
    pass
try:
    subprocess.Popen(["/bin/sleep", "4243"], start_new_session=True)
except OSError:
    pass
