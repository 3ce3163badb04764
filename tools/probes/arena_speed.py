"""Does one grader arena run the same work slower than another? GPU only.

Two arenas are made as the grader makes them (shared/vmm.py, the size of the rmsnorm
grade's), each with its own flush buffer as each GraderClock has, and the window's pieces
are timed on each, alternating which goes first: the input copy into the arena, the L2
flush, a bandwidth-bound kernel reading the arena's input and writing its output, and the
copy of that output out (the snapshot). Printed: each piece's median per arena (us) and the
second arena's excess, then the same with both arenas' virtual reservations aligned to
1 GiB, then with one flush buffer for both.
    python3 tools/probes/arena_speed.py          (on the H200; ~1 min)
"""
import ctypes
import statistics

import torch

from pytest_nodus.shared import vmm

ROWS, COLS = 16384, 8192  # rmsnorm's largest public size: 256 MiB in, 256 MiB out
ARENA = 3 << 30
ROUNDS = 40


def reserve_aligned(alignment):
    """vmm._map with an aligned virtual reservation (the probe's variant)."""
    original = vmm._cu().cuMemAddressReserve

    def reserve(ptr, size, _align, addr, flags):
        return original(ptr, size, ctypes.c_size_t(alignment), addr, flags)

    return reserve


def arena(alignment=None):
    driver = vmm._cu()
    if alignment is not None:
        saved, driver.cuMemAddressReserve = driver.cuMemAddressReserve, reserve_aligned(alignment)
    try:
        mapping, _fd = vmm.create(ARENA, 0)
    finally:
        if alignment is not None:
            driver.cuMemAddressReserve = saved
    return mapping.tensor()


def pieces(whole, flush, pristine, out):
    nbytes = pristine.numel() * 2
    x = whole[:nbytes].view(torch.bfloat16).view(ROWS, COLS)
    y = whole[nbytes:2 * nbytes].view(torch.bfloat16).view(ROWS, COLS)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(5)]
    torch.cuda._sleep(2_000_000)
    events[0].record()
    x.copy_(pristine)
    events[1].record()
    flush.zero_()
    events[2].record()
    torch.mul(x, 2, out=y)
    events[3].record()
    out.copy_(y)
    events[4].record()
    torch.cuda.synchronize()
    return [1e3 * a.elapsed_time(b) for a, b in zip(events, events[1:])]


def compare(label, arenas, flushes):
    pristine = torch.randn(ROWS, COLS, device="cuda").bfloat16()
    out = torch.empty_like(pristine)
    times = [[[] for _ in range(4)] for _ in arenas]
    for r in range(ROUNDS + 3):
        order = range(len(arenas)) if r % 2 else reversed(range(len(arenas)))
        for i in order:
            got = pieces(arenas[i], flushes[i], pristine, out)
            if r >= 3:
                for piece, t in zip(times[i], got):
                    piece.append(t)
    names = ("copy in", "flush", "kernel", "copy out")
    medians = [[statistics.median(p) for p in t] for t in times]
    addresses = " ".join(f"{a.data_ptr():#x} (mod 1 GiB {a.data_ptr() % (1 << 30) >> 20} MiB)" for a in arenas)
    print(f"{label}: arenas at {addresses}")
    for k, name in enumerate(names):
        print(f"  {name:9s} arena 0 {medians[0][k]:8.2f} us  arena 1 {medians[1][k]:8.2f} us  "
              f"excess {medians[1][k] - medians[0][k]:+6.2f} us")


torch.zeros(1, device="cuda")
l2 = torch.cuda.get_device_properties(0).L2_cache_size
flushes = [torch.empty(max(4 * l2, 256 << 20), dtype=torch.uint8, device="cuda") for _ in range(2)]
plain = [arena(), arena()]
compare("as the grader makes them", plain, flushes)
compare("one flush buffer", plain, [flushes[0], flushes[0]])
del plain
aligned = [arena(1 << 30), arena(1 << 30)]
compare("reservations aligned to 1 GiB", aligned, flushes)
