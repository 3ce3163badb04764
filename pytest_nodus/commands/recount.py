"""Count the recorded calls of JSON grades again with the timing rules of this checkout.

Every timed size of a grade keeps each call's three readings (``timed_calls``: the sandbox's
``t_stream`` and ``t_call``, the grader's window). Counting them is pure arithmetic
(:func:`pytest_nodus.grader.timing.summarise`, the function the grader itself calls), so a change
to the timing rules can be read against real GPU grades without re-running them: this
prints, per grade, each rerun's reward and speedup as recorded and as counted now, and every
size whose time moved by more than 1%.

    nodus-recount [--rounds K] GRADE.json...

``--rounds K`` counts each timed size on its first K timed rounds only, as they ran: what the
grade would have read had its environment timed K rounds (``Profile.timing``), for choosing
that number on real GPU grades. The submission's fixed cost stays the one the grade applied,
measured over all its rounds.

Statuses are taken as recorded (correctness does not depend on timing). The claims'
tripwires (forged_time, pending_work) are recomputed, and any change printed, only for
grades that recorded the submission's claims (schema before 2.0); since 2.0 the claims are
not recorded and the tripwires stand as recorded. The physical floor needs the device's
peaks and is not re-checked.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_nodus.grader import reward, timing


def calls_of(size: dict, rounds: int | None = None) -> dict[str, list[timing.CallTimes]]:
    """Each role's timed calls, in the order their rounds ran; the first ``rounds`` of them."""
    return {role: [timing.CallTimes.from_json(c) for c in calls[:rounds]] for role, calls in size["timed_calls"].items()}


def recount(path: Path, rounds: int | None = None) -> list[str]:
    grade = json.loads(path.read_text())
    device_kind = grade["device"]["kind"]
    lines, reruns = [], grade["reruns"]["count"]
    per_rerun: dict[int, list[dict]] = {n: [] for n in range(reruns)}
    for size in grade["sizes"]:
        entry = {"status": size["status"], "timed": size["kind"] != "fuzz", "speedup": size["speedup"]}
        if size.get("timed_calls") and size["timed_calls"].get("submission"):
            times = calls_of(size, rounds)
            summary = timing.summarise(times, device_kind, size.get("submission_overhead_ms"))
            speedup = (summary.expert.median / summary.submission_ms
                       if summary.expert.median and summary.submission_ms else None)
            entry["speedup"] = speedup
            old = size["t_submission_ms"]
            if _moved(old, summary.submission_ms) or _moved(size["t_expert_ms"], summary.expert.median):
                lines.append(f"   {size['id']:<24} r{size['rerun']} sub {old:.4f} -> {summary.submission_ms:.4f} ms, "
                             f"expert {size['t_expert_ms']:.4f} -> {summary.expert.median:.4f} ms, "
                             f"x{size['speedup']:.3f} -> x{speedup:.3f}")
            recorded = {f["code"] for f in grade["flags"] if f["size"] == size["id"] and f["rerun"] == size["rerun"]}
            now = {code for code, _ in summary.flags}
            claims_recorded = any(c.claimed for c in times["submission"])
            for code in (({"forged_time", "pending_work"} & recorded) ^ now) if claims_recorded else ():
                lines.append(f"   {size['id']:<24} r{size['rerun']} {code}: "
                             f"{'recorded, not raised now' if code in recorded else 'raised now, not recorded'}")
        per_rerun[size["rerun"]].append(entry)
    basis = grade.get("reward_basis", reward.SPEED_VS_EXPERT)  # schema < 2.2: every grade paid its speed
    verdicts = [reward.verdict(per_rerun[n]) for n in range(reruns)]
    rewards = [reward.paid(v, basis) for v in verdicts]
    head = (f"{path.parent.name}/{path.stem:<32} {grade['status']:<8} rewards "
            + " ".join(_figure(r) for r in grade["reruns"]["rewards"]) + " -> " + " ".join(_figure(r) for r in rewards))
    if "speedups" in grade["reruns"]:  # schema 1.1 on; the only figure of a grade that pays nothing
        head += ("  speedups " + " ".join(_figure(r) for r in grade["reruns"]["speedups"]) + " -> "
                 + " ".join(_figure(v.speedup) for v in verdicts))
    return [head] + lines


def _figure(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def _moved(recorded: float | None, now: float | None) -> bool:
    return bool(recorded and now) and abs(now / recorded - 1) > 0.01


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nodus-recount", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("grades", nargs="+", metavar="GRADE.json")
    parser.add_argument("--rounds", type=int, metavar="K", help="count only each size's first K timed rounds")
    args = parser.parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        parser.error("--rounds must be at least 1")
    for path in args.grades:
        print("\n".join(recount(Path(path), args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
