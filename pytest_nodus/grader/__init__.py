"""The grader: everything that runs in the pytest process, never in a submission's.

Declaring an environment: ``environment`` (contract, Profile per device kind, Cost),
``keepout`` (what a submission may not use, as intent), ``correctness`` (tolerances).
The pytest side: ``plugin`` (entry point), ``options``, ``session`` (gathering verdicts,
xdist), ``suite`` (the graded tests), ``fuzz`` (Hypothesis sizes and shrinking).
One size: ``grading`` (one verified call), ``rounds`` (a timed size's rounds, for one
submission or a batch), ``fuzzed_call`` (a fuzzed size's call, shared by a batch),
``sandbox_pool`` (one sandbox per role), ``roles`` (their names), ``sandbox_spawn`` (a
process inside its walls, told later what to run), ``standby`` (spawned as pytest configures),
``sandbox_process`` (launch, call, kill: the protocol's owner), ``sandbox_env`` (the
variables a sandbox starts with), ``checks`` (what
each reading is checked for, per role), ``inputs`` (fresh inputs, slots), ``results``.
The clock: ``clock`` (the grader's window), ``child_time`` and ``processes`` (/proc),
``process_memory`` (CPU outputs), ``timing`` (claims held to the clock), ``devices``.
Kept out of submissions: ``fatbin_scan``, ``heap_build``, ``arena_memory``.
The verdict: ``reward``, ``report`` (terminal and JSON), ``batch_files`` (a batch's documents,
rows and picture), ``workspace`` (an agent's folder).
For pipelines: ``api`` (``pytest_nodus.grade``: pytest in a process of its own), ``warm_grader``
(``pytest_nodus.WarmGrader``, in the caller's process) and ``prefork`` (the warm process it
starts, and each grade forked from it). A host's: ``bytecode`` and ``bytecode_files`` (the
grader's bytecode cache, filled by a helper process of its own, read by every sandbox).
"""
