"""Commands around the grader (grader-side; none runs in a sandbox), installed as console scripts.

- ``nodus-table GRADE.json...``: one line per grade, then per-size times (``table``);
- ``nodus-recount GRADE.json...``: count the recorded calls again with this version's timing rules (``recount``);
- ``nodus-workspace ENV DEST``: the folder an agent is given, nothing sealed (``workspace``);
- ``nodus-plot GRADE.json... -o OUT.png``: reward paid against the speed the timer measured (``plot``, the ``[plot]`` extra).
"""
