"""Drop from known_failures.py the listed spec tests that pass now (a maintenance tool).

    MONGOSIM_SPEC_REPORT=/tmp/spec.jsonl python -m pytest tests/spec --runxfail -q
    python -m tests.spec.prune_known_failures /tmp/spec.jsonl

With `--runxfail` every listed test runs as an ordinary test; the ones the
report says passed are removed, the rest keep their cause.  The file is
written back in its own layout: the causes still in use, then the lists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.spec import known_failures

PATH = Path(known_failures.__file__)


def passed_ids(report: Path) -> set[str]:
    lines = [json.loads(line) for line in report.read_text().splitlines() if line.strip()]
    return {line["id"] for line in lines if line["when"] == "call" and line["outcome"] == "passed"}


def render(by_cause: dict[str, list[str]], names: dict[str, str], head: str) -> str:
    out = [head.rstrip() + "\n"]
    for cause in by_cause:
        out.append(f"{names[cause]} = {json.dumps(cause)}\n")
    out.append("\n_BY_CAUSE: dict[str, list[str]] = {\n")
    for cause, ids in by_cause.items():
        out.append(f"    {names[cause]}: [  # {len(ids)}\n")
        out.extend(f"        {json.dumps(i)},\n" for i in ids)
        out.append("    ],\n")
    out.append("}\n\nKNOWN_FAILURES: dict[str, str] = {test_id: cause for cause, ids in _BY_CAUSE.items() "
               "for test_id in ids}\n")
    return "".join(out)


def main(report: str) -> None:
    gone = passed_ids(Path(report))
    text = PATH.read_text()
    head = text[: text.index("from __future__ import annotations")] + "from __future__ import annotations\n\n"
    names = {v: k for k, v in vars(known_failures).items() if k.isupper() and isinstance(v, str)}
    kept = {cause: [i for i in ids if i not in gone] for cause, ids in known_failures._BY_CAUSE.items()}
    kept = {cause: ids for cause, ids in sorted(kept.items(), key=lambda kv: -len(kv[1])) if ids}
    PATH.write_text(render(kept, names, head))
    removed = len(known_failures.KNOWN_FAILURES) - sum(map(len, kept.values()))
    print(f"removed {removed} passing tests; {sum(map(len, kept.values()))} known failures remain")


if __name__ == "__main__":
    main(sys.argv[1])
