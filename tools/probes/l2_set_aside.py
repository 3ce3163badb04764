"""Does one process's L2 set-aside for persisting accesses shrink another process's L2?

The attack it asks about: a submission sets the device's persisting-L2 limit to its maximum
(``cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize)``), pins a buffer there with a
persisting access-policy window, and is then frozen. If the set-aside and its lines outlive
its own time slices, every expert window meets a smaller L2 (the grader's L2 flush writes
normal lines, which do not evict persisting ones), and the expert's L2-resident work slows.

A victim process times an L2-sized read (half the L2, read again and again) alone, beside an
idle holder that did the above, and alone again. Equal figures: the set-aside is the
holder's own, and the wall holds. A slower middle row: a hole to close in the grader.

    python3 tools/probes/l2_set_aside.py
"""

from __future__ import annotations

import ctypes
import statistics
import subprocess
import sys

import torch

LIMIT_PERSISTING_L2 = 0x06  # cudaLimitPersistingL2CacheSize
ATTR_MAX_PERSISTING_L2 = 108  # cudaDevAttrMaxPersistingL2CacheSize
ATTR_MAX_WINDOW = 109  # cudaDevAttrMaxAccessPolicyWindowSize
STREAM_ATTR_POLICY_WINDOW = 1  # cudaStreamAttributeAccessPolicyWindow
PERSISTING, STREAMING = 2, 1  # cudaAccessProperty


def _cudart() -> ctypes.CDLL:
    torch.cuda.init()
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "libcudart" in line}
    if not paths:
        raise RuntimeError("libcudart is not loaded in this process")
    return ctypes.CDLL(sorted(paths)[0])


def _check(code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"{what} returned CUDA error {code}")


def holder() -> None:
    rt = _cudart()
    persisting, window = ctypes.c_int(), ctypes.c_int()
    _check(rt.cudaDeviceGetAttribute(ctypes.byref(persisting), ATTR_MAX_PERSISTING_L2, 0), "max persisting L2")
    _check(rt.cudaDeviceGetAttribute(ctypes.byref(window), ATTR_MAX_WINDOW, 0), "max policy window")
    _check(rt.cudaDeviceSetLimit(LIMIT_PERSISTING_L2, ctypes.c_size_t(persisting.value)), "set persisting limit")
    pinned = torch.ones(min(persisting.value, window.value) // 4, device="cuda")
    value = (ctypes.c_char * 64)()  # cudaStreamAttrValue: a 64-byte union, the window first
    ctypes.c_void_p.from_buffer(value, 0).value = pinned.data_ptr()
    ctypes.c_size_t.from_buffer(value, 8).value = pinned.numel() * 4
    ctypes.c_float.from_buffer(value, 16).value = 1.0
    ctypes.c_int.from_buffer(value, 20).value = PERSISTING
    ctypes.c_int.from_buffer(value, 24).value = STREAMING
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    _check(rt.cudaStreamSetAttribute(stream, STREAM_ATTR_POLICY_WINDOW, value), "set policy window")
    for _ in range(20):
        pinned.sum()  # its lines into the set-aside
    torch.cuda.synchronize()
    print(f"ready {persisting.value >> 20} MiB persisting, {pinned.numel() * 4 >> 20} MiB pinned", flush=True)
    sys.stdin.read()  # idle, its context alive, until the driver closes stdin


def victim() -> None:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    data = torch.ones(l2 // 2 // 4, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(30):
        start.record()
        for _ in range(50):
            data.sum()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 50)
    ms = statistics.median(times[5:])
    print(f"{l2 >> 20} MiB L2, read {data.numel() * 4 >> 20} MiB: {ms * 1e3:.1f} us, {data.numel() * 4 / ms / 1e6:.0f} GB/s")


def main() -> None:
    me = [sys.executable, __file__]
    run = lambda: subprocess.run([*me, "victim"], capture_output=True, text=True).stdout.strip()  # noqa: E731
    print("alone:         ", run())
    held = subprocess.Popen([*me, "holder"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    print("holder:        ", held.stdout.readline().strip())
    print("beside holder: ", run())
    held.stdin.close()
    held.wait()
    print("alone again:   ", run())


if __name__ == "__main__":
    {"holder": holder, "victim": victim}.get(sys.argv[1] if len(sys.argv) > 1 else "", main)()
