"""What the grader process and the sandbox process must agree on, and nothing else.

Imported by both sides: ``grader/`` (the pytest process) and ``sandbox/`` (the process that
runs a submission). It imports neither of them (``tests/unit/test_boundary.py`` holds it to
that), so nothing of the grader reaches the submission's process through it.

- :mod:`.arena`: the byte layout of the grader-owned memory a sandbox maps (input and
  receipt slots, the flag word and the output words);
- :mod:`.protocol`: the messages, their op names and reply stages, and how each side
  encodes them (pickle down, JSON only up);
- :mod:`.stream_ops`: the CUDA driver's stream memory operations both sides use on the flag;
- :mod:`.bits`: bitwise equality and poisoning of tensors.
"""
