"""Every status, reward basis, flag code and isolation label the grader can write is in docs/grade.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_nodus.grader import cgroup, reward, walls

DOC = (Path(__file__).resolve().parents[2] / "docs" / "grade.md").read_text()
CODES = sorted({*reward.FLAG_STATUS, "smallest_failing_size"})


@pytest.mark.parametrize("code", CODES)
def test_every_flag_code_has_a_row(code):
    assert re.search(rf"^\| `{code}` \| ", DOC, re.MULTILINE), code


@pytest.mark.parametrize("status", reward.STATUSES)
def test_every_status_has_a_row(status):
    assert re.search(rf"^\| `{status}` \| ", DOC, re.MULTILINE)


@pytest.mark.parametrize("basis", [reward.SPEED_VS_EXPERT, reward.CPU_CHECK, reward.VS_STARTING_KERNEL])
def test_every_reward_basis_has_a_row(basis):
    assert re.search(rf"^\| `{basis}` \| ", DOC, re.MULTILINE)


@pytest.mark.parametrize("label", ["process", "landlock-abiN", "trusted", cgroup.CGROUP, walls.NETWORK, walls.PROCESSES,
                                   walls.IPC, walls.USER, walls.NO_CAPABILITIES, walls.NO_NEW_PRIVS, walls.OWN_UID,
                                   walls.SECCOMP])
def test_every_isolation_label_is_named(label):
    assert f"`{label}`" in DOC
