"""A VMM allocation exported as a POSIX fd, and a stream-memory wait for a go word, in a sandbox of another uid in new namespaces; and the globaltimer gap probe that sees another context on the GPU (docs/sealing.md). GPU only."""
import os
import subprocess
import sys
import time

import torch

torch.cuda.init(); torch.zeros(1, device="cuda")
sys.path.insert(0, os.getcwd())
from pytest_nodus.shared import vmm
from pytest_nodus.shared.stream_ops import StreamMemoryOps

if len(sys.argv) > 1 and sys.argv[1] == "child":
    fd, size = int(sys.argv[2]), int(sys.argv[3])
    out = {"uid": os.getuid(), "pid": os.getpid()}
    try:
        t = vmm.import_fd(fd, size, 0).tensor()
        ops = StreamMemoryOps(); s = torch.cuda.Stream()
        go = t[size - 64:size - 60].view(torch.int32)
        ops.wait_geq(s, go, 1)  # waits for the parent's write
        with torch.cuda.stream(s): t[:1024].fill_(7)
        t0 = time.time(); s.synchronize(); out["waited_s"] = round(time.time() - t0, 2)
        out["mem"] = "ok"
    except Exception as e:
        out["mem"] = repr(e)[:200]
    print("RESULT", out, flush=True); sys.exit(0)
g = vmm.granularity(0); size = g * 4
mapping, fd = vmm.create(size, 0)
t = mapping.tensor(); print("granularity", g, "fd", fd)
ops = StreamMemoryOps(); s = torch.cuda.Stream()
drop = "setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs"
me = os.path.abspath(__file__)
for name, prefix in {"plain": "", "nobody": drop, "ns_nobody": f"unshare --net --pid --fork --mount-proc --ipc --mount {drop}"}.items():
    t.zero_(); torch.cuda.synchronize()
    p = subprocess.Popen(f"{prefix} python3 {me} child {fd} {size}", shell=True, pass_fds=(fd,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(8)  # the child is waiting on the go word by now
    ops.write(s, t[size - 64:size - 60].view(torch.int32), 1); s.synchronize()
    outp = p.communicate(timeout=60)[0]
    torch.cuda.synchronize()
    print(f"-- {name}: {[l for l in outp.splitlines() if 'RESULT' in l or 'Error' in l][-2:]} parent_sees={t[0].item()}", flush=True)
import triton
import triton.language as tl


@triton.jit
def gap_probe(out, ITERS: tl.constexpr):
    t_prev = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
    t0 = t_prev
    gap = t_prev - t_prev
    for i in range(ITERS):
        t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        gap = tl.maximum(gap, t - t_prev)
        t_prev = t
    tl.store(out, gap); tl.store(out + 1, t_prev - t0)
res = torch.zeros(2, dtype=torch.int64, device="cuda")
def probe(iters=200000):
    gap_probe[(1,)](res, ITERS=iters); torch.cuda.synchronize(); return res.tolist()
probe(1000)
print("idle probe (max gap ns, span ns):", [probe() for _ in range(3)], flush=True)
hog = subprocess.Popen([sys.executable, "-c", "import torch,time\nx=torch.zeros(1,device='cuda')\nt=time.time()\nwhile time.time()-t<6: torch.cuda._sleep(20000000); torch.cuda.synchronize()"])
time.sleep(4)
print("with a hog in another context:", [probe() for _ in range(3)], flush=True)
hog.wait()
print("after the hog:", [probe() for _ in range(2)], flush=True)
