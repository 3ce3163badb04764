"""A batch's room assumes every attempt keeps to the card's GPU memory budget, which the wall
reads only every 20 ms: an attempt over it for less can run a batch-mate out of memory. The API grades an attempt
that raised a GPU out-of-memory error in its batch again alone, and that grade stands; every
other attempt keeps its batch grade, and no other failure is graded twice."""

from __future__ import annotations

from pathlib import Path

from pytest_nodus.grader import api

OOM = "the kernel raised OutOfMemoryError: CUDA out of memory. Tried to allocate 8.05 GiB."


def _document(path: Path, status: str, flags=()) -> dict:
    return {"env": {"name": "attention_backward"}, "submission": {"path": str(path)}, "status": status,
            "reward": 0.1 if status == "correct" else -24.0, "speedup": 1.07 if status == "correct" else None,
            "flags": [{"size": "public-0", "rerun": 0, "code": code, "detail": detail} for code, detail in flags],
            "sizes": [], "sealed": False}


def test_only_the_attempt_run_out_of_gpu_memory_is_graded_again_alone(monkeypatch, tmp_path):
    files = [tmp_path / f"{name}.py" for name in ("honest", "greedy", "wrong", "raises")]
    for f in files:
        f.write_text("")
    in_batch = {"honest": ("error", [("raised", OOM)]), "greedy": ("wrong", [("wrong_values", "dq off")]),
                "wrong": ("wrong", [("wrong_values", "dq off")]),
                "raises": ("error", [("raised", "the kernel raised ValueError: no")])}
    runs = []

    def run(runner, env, submission, **options):
        runs.append(submission)
        if len(submission) > 1:
            return [api.Grade.from_document(_document(f, *in_batch[f.stem])) for f in submission]
        return [api.Grade.from_document(_document(submission[0], "correct"))]  # alone, it had the memory it needed

    monkeypatch.setattr(api, "_run", run)
    grades = api.grade("attention_backward", files)
    assert runs == [files, [files[0]]]
    assert [g.status for g in grades] == ["correct", "wrong", "wrong", "error"]
    assert [g.submission.stem for g in grades] == ["honest", "greedy", "wrong", "raises"]


def test_a_lone_grade_run_out_of_memory_stands(monkeypatch, tmp_path):
    runs = []

    def run(runner, env, submission, **options):
        runs.append(submission)
        return [api.Grade.from_document(_document(submission[0], "error", [("raised", OOM)]))]

    monkeypatch.setattr(api, "_run", run)
    assert api.grade("attention_backward", tmp_path / "alone.py").status == "error"
    assert len(runs) == 1
