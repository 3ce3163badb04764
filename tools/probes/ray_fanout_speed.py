"""Four rmsnorm attempts (the solution, the starting kernel, a correct style, a cheat), sealed,
on the CPU: graded one after another through ``pytest_nodus.grade``, then as Ray tasks on a
local 2-CPU instance; wall seconds and verdicts of each way.

    python tools/probes/ray_fanout_speed.py
"""

import time

import ray

from pytest_nodus import grade
from pytest_nodus.fanout.ray_grades import grade_attempts

ATTEMPTS = ["expert/rmsnorm/solution.py", "env_suites/rmsnorm/starting_kernel.py",
            "tests/correct/rmsnorm/torch_ops.py", "tests/cheats/rmsnorm/return_input.py"]

began = time.perf_counter()
one_by_one = [grade("rmsnorm", a, sealed="sealed_fixtures", device="cpu").status for a in ATTEMPTS]
one_by_one_s = time.perf_counter() - began
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 << 20)
began = time.perf_counter()
rows = grade_attempts("rmsnorm", ATTEMPTS, sealed="sealed_fixtures", device="cpu")
print(f"one after another: {one_by_one_s:.1f} s {one_by_one}")
print(f"Ray, 2 CPUs:       {time.perf_counter() - began:.1f} s {[r['status'] for r in rows]}")
