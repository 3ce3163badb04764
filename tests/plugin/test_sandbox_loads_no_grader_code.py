"""The submission's process holds no grader code: not one ``pytest_nodus.grader`` module is loaded there.

The kernel below reports what it finds by raising (the one thing a sandbox's text reaches the
grade through), so this is read from inside a real sandbox of a real grade.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.grade

KERNEL = '''
import sys

def kernel(x, weight, eps):
    grader = sorted(m for m in sys.modules if m.startswith(("pytest_nodus.grader", "pytest_nodus.commands")))
    rooms = sorted({m.split(".")[1] for m in sys.modules if m.startswith("pytest_nodus.")})
    raise RuntimeError(f"grader modules {grader or 'none'}; rooms {rooms}")
'''


def test_the_sandbox_imports_only_its_own_room_and_the_shared_one(grade, tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL)
    result = grade(kernel, "-k", "public-0")
    (flag,) = [f for f in result.document["flags"] if f["code"] == "raised"]
    assert "grader modules none; rooms ['sandbox', 'shared']" in flag["detail"], flag
