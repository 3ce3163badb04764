"""The chunked_prefill solution's block plan (``_plan_blocks``, one launch) lists every block of
new tokens exactly once, in the order of the keys it visits, largest first (ties: the earlier
sequence), for mixed batches: one-token chunks, whole prompts, long prefixes, up to 64
sequences. Run in Triton's interpreter, against the plan worked out in Python."""

from __future__ import annotations

from conftest import in_interpreter

SCRIPT = """
import importlib.util, json, random, sys
import torch
spec = importlib.util.spec_from_file_location("solution", "expert/chunked_prefill/solution.py")
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)
rng = random.Random(json.loads(sys.argv[1]))
wrong = []
for trial in range(24):
    b = rng.choice([1, 2, 3, 17, 64])
    tokens = rng.choice([1, 16, 32, 64])  # tokens per block: BLOCK_M over the group's padded heads
    lengths = [rng.choice([1, rng.randint(1, 300), rng.randint(1, 2000)]) for _ in range(b)]
    prefixes = [rng.choice([0, rng.randint(0, 5000)]) for _ in range(b)]
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    cached = torch.tensor([p + n for p, n in zip(prefixes, lengths)], dtype=torch.int32)
    seq, start, count = solution._work_items(cu, cached, tokens, sum(lengths) // tokens + b)
    blocks = sorted((-(p + k * tokens + tokens), i, k * tokens)
                    for i, (n, p) in enumerate(zip(lengths, prefixes)) for k in range(-(-n // tokens)))
    n = int(count.item())
    if list(zip(seq[:n].tolist(), start[:n].tolist())) != [(i, s) for _, i, s in blocks]:
        wrong.append([b, tokens, n, len(blocks)])
print(json.dumps(wrong))
"""


def test_every_block_once_heaviest_first():
    assert in_interpreter(SCRIPT, 7) == []
