"""Print the agent-facing report of JSON grades (``pytest_nodus/grader/agent_report.py``):
what an RL pipeline may show the agent that wrote the submission.

    nodus-agent GRADE.json...
"""

import argparse
import json
import sys
from pathlib import Path

from pytest_nodus.grader import agent_report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nodus-agent", description=__doc__.splitlines()[0])
    parser.add_argument("grades", nargs="+", type=Path, metavar="GRADE.json", help="grades written by --nodus-json")
    args = parser.parse_args(argv)
    for path in args.grades:
        print("\n".join(agent_report.lines(agent_report.build(json.loads(path.read_text())))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
