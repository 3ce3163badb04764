"""The grader's own GPU memory: handed back between sizes, and waited for when other grades
on the GPU hold it.

Several grades may share one GPU (an RL pipeline's batch, ``tools/gpu_check.sh``'s lanes), and
together they can ask for more than it has: each grade holds its references, pristine copies
and two sandboxes' arenas for minutes, and three attention-sized grades are enough to fill an
H200's 139 GiB (docs/results/throughput.md). The
grade whose allocation meets the shortage did nothing wrong and neither did its submission, so
the size waits for other grades to end and is graded again from fresh inputs; only past
``--nodus-gpu-wait`` is it ``grader_out_of_memory``. Runs only in the grader.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import torch

from pytest_nodus.grader import devices, phases
from pytest_nodus.grader.results import SizeResult

# Pauses before each new attempt: 5 s doubling to 30 s, in all at most --nodus-gpu-wait. The
# first is short because a neighbour's size (and its memory) often ends within seconds; the
# last is long because a neighbour's whole grade can take minutes.
PAUSE_S = (5.0, 30.0)


class OutOfMemory(Exception):
    """The grader's own allocation failed in an attempt at a size; ``results`` are that
    attempt's, one per submission graded (a batch grades several)."""

    def __init__(self, results: list[SizeResult]):
        super().__init__(results[0].id)
        self.results = results


@contextmanager
def attempting(results: list[SizeResult]):
    """One attempt at a size, for :func:`waiting_for_memory`: the grader's own out-of-memory
    becomes :class:`OutOfMemory` (the size is tried again), and a GPU that other grades held
    past the wait puts every result at ``gpu_busy``. That is not the submission's doing either,
    and no grade vouches for a size it did not time: the floor, under a code a pipeline can
    retry on."""
    try:
        yield
    except torch.OutOfMemoryError as exc:
        raise OutOfMemory(results) from exc
    except devices.DeviceBusy as busy:
        for result in results:
            result.flag("gpu_busy", str(busy))


def pauses(wait_s: float):
    """The pauses before each new attempt, exhausted once they would add up past ``wait_s``."""
    waited, pause = 0.0, PAUSE_S[0]
    while waited + pause <= wait_s:
        yield pause
        waited += pause
        pause = min(2 * pause, PAUSE_S[1])


def release(device) -> None:
    """References and pristine copies are cached by torch's allocator; handing them back
    leaves the GPU memory to the sandboxes (a correct kernel must never hit an OOM because
    the grader kept a previous size's buffers) and to other grades on the GPU."""
    if device.kind == "cuda":
        torch.cuda.empty_cache()


def waiting_for_memory(attempt, device, wait_s: float) -> list[SizeResult]:
    """``attempt()`` (a size from fresh inputs: its results, one per submission, or
    :class:`OutOfMemory`) until the grader's own allocations fit or ``wait_s`` is spent; the
    submissions' calls of a failed attempt are discarded with their inputs. The wait is the
    size's ``gpu_wait`` phase."""
    waits, waited_s = pauses(wait_s), 0.0
    while True:
        try:
            results = attempt()
            break
        except OutOfMemory as out:
            if (pause := next(waits, None)) is None:
                results = _out_of_memory(out.results, out.__cause__, device, waited_s)
                break
            release(device)
            time.sleep(pause)
            waited_s += pause
    if waited_s:
        for result in results:
            phases.add(result.phases, "gpu_wait", 1e3 * waited_s)
    return results


def _out_of_memory(results: list[SizeResult], exc: BaseException, device, waited_s: float) -> list[SizeResult]:
    """Still no memory: not the submission's verdict, but no grade can vouch for a size it did
    not run, so the size stays at the floor under a code of its own, which a pipeline retries
    on a GPU that is not shared."""
    detail = f"{type(exc).__name__}"
    if device.kind == "cuda":
        free, total = torch.cuda.mem_get_info(torch.device(device.torch_name))
        detail += (f": {free / 2**20:.0f} MiB free of {total / 2**30:.0f} GiB on {device.torch_name} after waiting "
                   f"{waited_s:.0f} s; other processes hold the rest (several grades on one GPU?)")
    for result in results:
        result.flag("grader_out_of_memory", detail)
    release(device)
    return results
