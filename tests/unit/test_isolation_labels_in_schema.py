"""Every isolation label the grader can write is one the grade's schema accepts.

A wall added to the grader without its label in the schema makes every grade on a machine
that raises it fail validation; this checks the labels where they are defined, without a grade.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_nodus.grader import cgroup, cgroup_limits, walls

SCHEMA = json.loads((Path(walls.__file__).parent / "schema" / "grade.schema.json").read_text())
PATTERN = re.compile(SCHEMA["properties"]["isolation"]["items"]["pattern"])

LABELS = ["trusted", "process", "landlock-abi1", "landlock-abi7", cgroup.CGROUP,
          walls.NETWORK, walls.PROCESSES, walls.IPC, walls.USER, walls.NO_CAPABILITIES,
          walls.NO_NEW_PRIVS, walls.OWN_UID, walls.SECCOMP, cgroup_limits.MEMORY_LIMIT,
          cgroup_limits.TASKS_LIMIT]


@pytest.mark.parametrize("label", LABELS)
def test_the_schema_accepts_every_wall_the_grader_raises(label):
    assert PATTERN.match(label)


def test_the_schema_refuses_a_label_no_wall_writes():
    assert not PATTERN.match("sealed-ish")
