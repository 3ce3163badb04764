"""A kernel file whose import never ends is stopped at the import's limit (its call limit, at
least a minute: ``environment.load_timeout_s``), once: the attempt counts as hung and is not
started again at the grade's other sizes and fuzzed sizes, each of which would cost the
same limit again."""

from __future__ import annotations

import pytest

from pytest_nodus.grader.environment import LOAD_TIMEOUT_FLOOR_S

pytestmark = pytest.mark.grade

HANGS_AT_IMPORT = '''
import time

time.sleep(10 ** 6)


def kernel(x, weight, eps):
    return x
'''


def test_the_import_is_stopped_once(grade, tmp_path):
    hanging = tmp_path / "hangs.py"
    hanging.write_text(HANGS_AT_IMPORT)
    # The call limit is 3 s: the import gets the floor, a minute.
    result = grade(hanging, "--nodus-call-timeout=3")
    document = result.document
    assert document["status"] == "timeout" and document["reward"] == -24, document["flags"]
    timeouts = [f for f in document["flags"] if f["code"] == "timeout"]
    assert "loading the kernel file" in timeouts[0]["detail"]
    assert any("already hung" in f["detail"] for f in timeouts[1:]), document["flags"]
    # One import's limit, not one per size: the CPU profile has two public sizes, one hidden
    # when sealed, and eight fuzzed ones.
    assert LOAD_TIMEOUT_FLOOR_S <= document["wall_s"] < 2 * LOAD_TIMEOUT_FLOOR_S, document["wall_s"]
