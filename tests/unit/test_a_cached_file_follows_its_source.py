"""A file in the grader's bytecode cache is Python's own pyc of its source as it is now: copied from beside the source where that is current, compiled where not, and replaced once the source changes."""

from __future__ import annotations

import importlib.util
import marshal
import os
import py_compile

from pytest_nodus.grader import bytecode_files


def _code(pyc: str):
    with open(pyc, "rb") as f:
        return marshal.loads(f.read()[16:])


def test_compiled_then_kept_then_compiled_again_after_an_edit(tmp_path):
    source = tmp_path / "lib" / "module.py"
    source.parent.mkdir()
    source.write_text("x = 1\n")
    where = tmp_path / "cache"
    assert bytecode_files.compile_into(where, [str(source)], workers=1) == 1
    target = bytecode_files._target(str(where), str(source))
    assert target.startswith(str(where) + "/") and bytecode_files.current(target, os.stat(source))
    assert 1 in _code(target).co_consts
    assert os.stat(target).st_mode & 0o777 == 0o644  # every sandbox's uid reads it
    source.write_text("x = 22\n")
    assert not bytecode_files.current(target, os.stat(source))
    bytecode_files.compile_into(where, [str(source)], workers=1)
    assert 22 in _code(target).co_consts


def test_a_current_pyc_beside_the_source_is_copied(tmp_path):
    source = tmp_path / "module.py"
    source.write_text("y = 3\n")
    beside = importlib.util.cache_from_source(str(source))
    py_compile.compile(str(source), cfile=beside, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    where = tmp_path / "cache"
    bytecode_files.compile_into(where, [str(source)], workers=1)
    with open(beside, "rb") as a, open(bytecode_files._target(str(where), str(source)), "rb") as b:
        assert a.read() == b.read()


def test_a_file_python_would_not_import_is_left_out(tmp_path):
    broken = tmp_path / "template.py"
    broken.write_text("def (:\n")
    assert bytecode_files.compile_into(tmp_path / "cache", [str(broken)], workers=1) == 0


def test_a_refill_keeps_only_the_bytecode_of_todays_sources(tmp_path):
    kept, gone = tmp_path / "kept.py", tmp_path / "gone.py"
    kept.write_text("a = 1\n")
    gone.write_text("b = 2\n")
    where = tmp_path / "cache"
    bytecode_files.compile_into(where, [str(kept), str(gone)], workers=1)
    half_written = bytecode_files._target(str(where), str(kept)) + ".4242"
    open(half_written, "wb").close()
    (where / "complete.json").write_text("{}")
    assert bytecode_files.prune(where, [str(kept)]) == 2
    assert os.path.exists(bytecode_files._target(str(where), str(kept)))
    assert not os.path.exists(bytecode_files._target(str(where), str(gone))) and not os.path.exists(half_written)
    assert (where / "complete.json").exists()
