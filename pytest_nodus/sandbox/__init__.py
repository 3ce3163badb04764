"""The sandbox: the only code that runs in a submission's process.

``python -m pytest_nodus.sandbox`` is started by the grader (``grader/sandbox_process.py``),
one process per kernel file (a submission, the expert, a baseline). Nothing here imports
``pytest_nodus.grader``; everything it says to the grader is a claim the grader checks.

- :mod:`.__main__`: start-up, in order: device context, the arena and the clock's handles
  mapped, removed kernels and templates taken out, confinement, and only then the kernel
  file imported; then the request loop;
- :mod:`.harness`: what each request does (arm a call, run it, finish a size);
- :mod:`.outputs`: where the outputs are and whether they are plain tensors of the contract;
- :mod:`.audit`: which ops and kernels ran (the torch profiler, on every stream);
- :mod:`.confine` and :mod:`.landlock`: the kernel-enforced file, network and signal rules;
- :mod:`.guard`: tripwires (patched primitives, threads, escape attempts);
- :mod:`.fatbin_removal`, :mod:`.templates`: library kernels kept out of this process;
- :mod:`.heap`: on the GPU, a call's allocations in the grader's arena;
- :mod:`.triton_interpreter`: on the CPU, bf16 arithmetic the interpreter gets right.
"""
