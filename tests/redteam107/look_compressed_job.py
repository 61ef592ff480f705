# Data for test_rt107_f1_look_deletes_on_a_neighbour_it_did_not_copy.py (a background job's program, run in the box).
# argv[1] == "gz": each notes file is kept beside, gzip-compressed (as `gzip notesN.txt` leaves it), then removed;
# a filler file first (sorted before them) takes the look's copy budget (64 MiB) so the .gz files wait for the end.
# After the look, the .gz files are removed too, and the job ends.
# argv[1] == "plain": the control: the notes files removed, nothing kept beside.
import gzip
import os
import sys
import time

mode = sys.argv[1]
time.sleep(0.3)
with open("a.bin", "wb") as fh:
    fh.write(b"\x01" * ((64 << 20) - 8))
for i in range(5):
    name = f"notes{i}.txt"
    if mode == "gz":
        with open(name, "rb") as src:
            data = src.read()
        with gzip.open(name + ".gz", "wb") as dst:
            dst.write(data)
    os.remove(name)
print("made", flush=True)
time.sleep(float(sys.argv[2]))  # the look happens meanwhile
if mode == "gz":
    for i in range(5):
        os.remove(f"notes{i}.txt.gz")
print("done", flush=True)
