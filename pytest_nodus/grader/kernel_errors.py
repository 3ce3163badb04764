"""What a kernel raised, told against its author's own file; and how a sandbox's exit is told.

The sandbox reports an exception as its type, its message and the lines of the kernel file
on its traceback (``sandbox/tracebacks.py``); it runs a copy of the file under another name
(``protocol.KERNEL_FILE``), so the grader puts the author's file name back on every line:

    ValueError: the rows do not fit
      k.py:12 in kernel: y = torch.empty(m, n + 1)
      k.py:31 in _launch: raise ValueError("the rows do not fit")

All of it is the submission's text (a report, not a fact): it is read as untrusted JSON,
cut to size, and what reaches the report goes through ``SizeResult.public_text``.
"""

from __future__ import annotations

from pathlib import Path

from pytest_nodus.shared.protocol import KERNEL_FILE, KERNEL_MODULE

_MAX_FRAMES = 6


def describe(error, kernel_path: Path | str) -> str:
    """One line for the exception, then one per line of the author's file, innermost last."""
    error = error if isinstance(error, dict) else {}
    name = Path(kernel_path).name
    text = f"{str(error.get('type') or 'Error')[:80]}: {_own_name(str(error.get('message') or ''), name)[:300]}"
    frames = error.get("frames") if isinstance(error.get("frames"), list) else []
    for frame in frames[-_MAX_FRAMES:]:
        if not isinstance(frame, dict):
            continue
        line = frame.get("line") if isinstance(frame.get("line"), int) else "?"
        source = str(frame.get("text") or "")[:160]
        text += f"\n  {name}:{line} in {str(frame.get('function') or '?')[:60]}" + (f": {source}" if source else "")
    return text


def _own_name(message: str, name: str) -> str:
    return message.replace(KERNEL_FILE, name).replace(KERNEL_MODULE, Path(name).stem)


# The end of the sandbox's own output a start-up failure quotes: a traceback's last frames.
LOG_TAIL_CHARS = 800
STARTUP = "start-up"


def exit_detail(code, during: str, log_tail: str) -> str:
    """A sandbox's exit, and for one during start-up the end of its output. Only then: start-up
    runs the harness's own code, before the kernel file loads; from the load on, the output is
    the submission's, which could carry what it saw (a hidden size's shapes) into the report."""
    detail = f"the sandbox exited (status {code}) during {during}"
    tail = log_tail.strip()
    if during == STARTUP and tail:
        detail += ": " + " | ".join(line.strip() for line in tail.splitlines()[-6:] if line.strip())
    return detail
