"""Each rerun's fuzzed sizes run before its timed sizes (they call no expert, so the expert's
sandbox finishes starting beside them); tests that are not graded keep their places."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_nodus.grader.session import _fuzz_first


def _item(name: str, rerun: int | None = None, label: str = ""):
    item = SimpleNamespace(originalname=name, label=f"{name}[{rerun}-{label}]" if rerun is not None else name)
    if rerun is not None:
        item.callspec = SimpleNamespace(params={"nodus_rerun": rerun})
    return item


def test_each_reruns_fuzz_comes_first_and_other_tests_stay_put():
    other = _item("test_something_else")
    items = [other, _item("test_size", 0, "public-0"), _item("test_size", 0, "hidden-0"),
             _item("test_size", 1, "public-0"), _item("test_fuzzed_sizes", 0), _item("test_fuzzed_sizes", 1)]
    graded = items[1:]
    _fuzz_first(items, graded)
    assert [i.label for i in items] == [
        "test_something_else", "test_fuzzed_sizes[0-]", "test_size[0-public-0]", "test_size[0-hidden-0]",
        "test_fuzzed_sizes[1-]", "test_size[1-public-0]"]


def test_one_rerun_without_parameters():
    items = [_item("test_size", None), _item("test_size", None), _item("test_fuzzed_sizes", None)]
    names = [id(i) for i in items]
    _fuzz_first(items, list(items))
    assert [id(i) for i in items] == [names[2], names[0], names[1]]
