"""The chunked_prefill solution's other paths grade correct on the CPU, sealed, as its default
does: tiles wider than a page (pages looked up per key, masked past the table's width) and K
and V loaded by TMA descriptors. On the CPU its default tiles are one page wide, so neither
path runs there unless switched on; a path a tile sweep on the H200 may pick must never be
one that gives wrong outputs."""

from __future__ import annotations

import pytest
from conftest import solution_with_config

pytestmark = pytest.mark.grade

SWITCHES = {
    "tiles_wider_than_a_page": "dict(base(d, page, device), BLOCK_N=32)",
    "tma": "dict(base(d, page, device), TMA=True)",
}


@pytest.mark.parametrize("path", sorted(SWITCHES))
def test_the_path_grades_correct(grade, tmp_path, path):
    kernel = solution_with_config(tmp_path, "chunked_prefill", path, "d, page, device", SWITCHES[path])
    result = grade(kernel, env="chunked_prefill", sealed=True)
    assert result.outcome.ret == 0, result.text
    assert result.document["status"] == "correct", result.document["flags"]
