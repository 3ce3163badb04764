"""What a kernel file raised, said the way its author needs it.

Runs in the sandbox. The report names the exception and, of its traceback, only the frames
in the kernel file (line, function, source text): the author's own lines. Frames of torch,
Triton or the harness tell the author nothing they can change, and they would describe the
sandbox to the submission's reader. The grader puts the author's file name on the lines
(``grader/kernel_errors.py``): the sandbox runs a copy of the file under another name.
"""

from __future__ import annotations

import traceback

from pytest_nodus.shared.protocol import KERNEL_FILE
_FRAMES = 6  # the innermost lines of the author's file: enough to follow a call down a helper or two


def _frame(line: int | None, function: str, text: str | None) -> dict:
    return {"line": int(line or 0), "function": function, "text": (text or "").strip()[:160]}


def describe(exc: BaseException) -> dict:
    """``{"type", "message", "frames"}``; ``frames`` innermost last."""
    frames = [_frame(f.lineno, f.name, f.line) for f in traceback.extract_tb(exc.__traceback__)
              if f.filename.endswith(KERNEL_FILE)]
    message = str(exc)
    if isinstance(exc, SyntaxError):
        # str() of a SyntaxError appends "(file, line N)" with the copy's name: the frame says it.
        message = exc.msg or message
        if (exc.filename or "").endswith(KERNEL_FILE):
            frames.append(_frame(exc.lineno, "<module>", exc.text))
    return {"type": type(exc).__name__, "message": message[:300], "frames": frames[-_FRAMES:]}
