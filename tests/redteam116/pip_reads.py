"""Print, as JSON, the index url and the requirements pip itself reads from the requirements file given (argument 1),
with pip's own parser (run by a Python that has pip; nothing is downloaded)."""

import importlib
import json
import sys
from typing import Any

session: Any = importlib.import_module("pip._internal.network.session")
req_file: Any = importlib.import_module("pip._internal.req.req_file")

index_url: str | None = None
requirements: list[str] = []
parser = req_file.RequirementsFileParser(session.PipSession(), req_file.get_line_parser(None))
for line in parser.parse(sys.argv[1], constraint=False):
    if line.is_requirement:
        requirements.append(str(line.requirement))
    elif line.opts.index_url:
        index_url = str(line.opts.index_url)
print(json.dumps({"index_url": index_url, "requirements": requirements}))
