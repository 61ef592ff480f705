"""A background job's program: make ``d`` with one file in it, then wait (so that a look lands them), then end."""

import os
import sys
import time

os.mkdir("d")
with open("d/f.txt", "w") as f:
    f.write("the job's file\n")
sys.stdout.write("made\n")
sys.stdout.flush()
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 6)
sys.stdout.write("done\n")
