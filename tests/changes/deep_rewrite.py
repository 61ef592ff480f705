# Data for test_attack_program_beside_a_config_past_path_max.py (a command's program, run in the box from the root).
# argv[1:]: the names to go down, one by one; then it rewrites ./x in place, keeping its mode.
import os
import sys

for name in sys.argv[1:]:
    os.chdir(name)
with open("x", "r+") as fh:
    fh.truncate(0)
    fh.write("#!/bin/sh\necho rewritten > helper-ran.txt\n")
print("rewritten", flush=True)
