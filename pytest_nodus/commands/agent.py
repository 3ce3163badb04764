"""Print the agent-facing report of JSON grades (``pytest_nodus/grader/agent_report.py``):
what an RL pipeline may show the agent that wrote the submission.

    nodus-agent GRADE.json...
"""

import json
import sys
from pathlib import Path

from pytest_nodus.grader import agent_report


def main(paths=None) -> int:
    for path in sys.argv[1:] if paths is None else paths:
        print("\n".join(agent_report.lines(agent_report.build(json.loads(Path(path).read_text())))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
