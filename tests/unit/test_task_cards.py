"""Each task card's sizes, domain, tolerance and limits are the ones its environment declares."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_nodus.commands import card

SUITES = sorted(p.parent for p in (Path(__file__).resolve().parents[2] / "env_suites").glob("*/environment.py"))


@pytest.mark.parametrize("folder", SUITES, ids=lambda p: p.name)
def test_the_card_holds_the_declared_facts(folder):
    env = card.load(folder)
    text = (folder / "TASK.md").read_text()
    assert card.update(text, env) == text, f"run: nodus-card {folder}"
    for profile in env.profiles.values():
        for dims in profile.sizes:
            assert card._dims(dims) in text


def test_a_card_that_disagrees_is_caught(tmp_path):
    folder = SUITES[0]
    env = card.load(folder)
    stale = (folder / "TASK.md").read_text().replace(card._dims(env.profile("cuda").sizes[0]), "M=1, N=1")
    assert card.update(stale, env) != stale
