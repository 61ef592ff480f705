"""Run inside repository A (cwd = its top): a new pack naming blob id argv[1] with other (harmless) content."""

import sys

sys.path.insert(0, sys.argv[2])
from git_forge import write_pack  # type: ignore[import-not-found]  # (tests/support, put on the path above)

write_pack([(sys.argv[1], 3, b"echo rt80-forged\n")])
