"""Print the node ids (or module paths) the README's run skipped that the every-client run
did not select, one a line: CI runs these too, so every test a missing client skips runs.

    python .ci/left_to_run.py SKIPPED SELECTED
"""

import sys
from pathlib import Path


def main(skipped_file: str, selected_file: str) -> None:
    selected = Path(selected_file).read_text(encoding="utf-8").splitlines()
    chosen = set(selected)
    modules = {nodeid.split("::", 1)[0] for nodeid in selected}
    seen: set[str] = set()
    for nodeid in Path(skipped_file).read_text(encoding="utf-8").splitlines():
        # A module skipped whole is its path; the every-client run chose all of it or none.
        covered = nodeid in chosen if "::" in nodeid else nodeid in modules
        if nodeid and not covered and nodeid not in seen:
            seen.add(nodeid)
            print(nodeid)


if __name__ == "__main__":
    main(*sys.argv[1:])
