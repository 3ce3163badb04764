"""Points close together keep readable names: the cheats that crashed before any timing all
sit at the floor's left edge, and their labels are stacked, not drawn over one another."""

from __future__ import annotations

import pytest

from pytest_nodus.commands import plot

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def _boxes(points):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 6.5))
    for pts in points.values():
        ax.scatter([p[0] for p in pts], [p[1] for p in pts])
    ax.set_xscale("log")
    ax.set_ylim(-26.5, 4)
    plot._label(ax, fig, points)
    renderer = fig.canvas.get_renderer()
    boxes = [text.get_window_extent(renderer) for text in ax.texts]
    anchors = [ax.transData.transform(p[:2]) for pts in points.values() for p in pts]
    plt.close(fig)
    return boxes, anchors


def test_labels_of_points_at_one_spot_and_nearby_do_not_overlap():
    crashed = [(1e-2, -24.0, f"cheat_crashes_{n}_before_timing", "error") for n in range(11)]
    nearby = [(1.5e-2, -24.0, "cheat_ignores_gqa_grouping", "wrong"), (1.6e-2, -5.9, "correct_torch_dense", "correct"),
              (1.55e-2, -6.0, "correct_packed_dkv", "correct"), (1.7e-2, -5.88, "cheat_correct_only_at_d128", "correct")]
    boxes, _ = _boxes({"cheats": crashed + nearby[:1] + nearby[3:], "correct kernels": nearby[1:3]})
    assert len(boxes) == 15
    overlapping = [(i, j) for i, a in enumerate(boxes) for j, b in enumerate(boxes[:i]) if a.overlaps(b)]
    assert overlapping == []


def test_points_apart_keep_their_labels_beside_them():
    boxes, anchors = _boxes({"solution": [(1.2, 0.26, "solution", "correct")],
                             "cheats": [(1e-2, -24.0, "cheat_zero_gradients", "flagged")]})
    for box, (x, y) in zip(boxes, anchors):
        assert 0 < box.x0 - x < 10 and 0 < box.y0 - y < 10  # a few points right of and above its dot
