"""``pytest_nodus.grade`` given more attempts than the GPU holds at once grades them in runs
of at most as many as the grader says fit, as even as they split, in order, each run a batch
of its own (a run of one file a lone grade); any other failure of a batch is raised as it is."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_nodus.grader import api, batch_files


def _fake_runs(room: int, runs: list):
    def run(env, files, **options):
        runs.append([f.name for f in files])
        if len(files) > room:
            raise api.GradeFailed("pytest wrote no grade (exit status 4)",
                                  "ERROR: " + batch_files.too_large(len(files), room, 470.0, 140.0))
        return [SimpleNamespace(name=f.name, document={"flags": []}) for f in files]
    return run


@pytest.mark.parametrize("attempts, room, split", [(8, 3, [3, 3, 2]), (16, 3, [3, 3, 3, 3, 2, 2]), (4, 3, [2, 2]),
                                                   (3, 1, [1, 1, 1])])
def test_a_batch_past_the_room_is_graded_in_even_runs_that_fit(monkeypatch, tmp_path, attempts, room, split):
    runs = []
    monkeypatch.setattr(api, "_run", _fake_runs(room, runs))
    files = [tmp_path / f"attempt{i}.py" for i in range(attempts)]
    grades = api.grade("rmsnorm", files)
    assert [g.name for g in grades] == [f.name for f in files]  # every attempt, in order
    assert runs[0] == [f.name for f in files]  # the whole batch was asked first
    assert [len(r) for r in runs[1:]] == split


def test_a_batch_that_fails_otherwise_raises(monkeypatch, tmp_path):
    def broken(env, files, **options):
        raise api.GradeFailed("pytest wrote no grade (exit status 4)", "ERROR: no environment")
    monkeypatch.setattr(api, "_run", broken)
    with pytest.raises(api.GradeFailed):
        api.grade("rmsnorm", [Path(tmp_path / "a.py"), Path(tmp_path / "b.py")])
