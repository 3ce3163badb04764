"""Probe: which direction of CUDA IPC works between the grader and a (Landlocked) sandbox.

python tools/probes/cuda_ipc_probe.py   (on a GPU machine)
"""
import io, os, pickle, subprocess, sys
from multiprocessing.reduction import ForkingPickler

import torch
import torch.multiprocessing  # noqa: F401

CHILD = r'''
import os, pickle, sys, torch, torch.multiprocessing
sys.path.insert(0, os.environ["ROOT"])
from pytest_nodus import landlock
mode, blob = sys.argv[1], bytes.fromhex(sys.stdin.readline().strip())
torch.empty(1, device="cuda")
if mode.endswith("landlock"):
    import site
    ro = ["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/sys", "/dev", sys.prefix, sys.base_prefix] + site.getsitepackages()
    devs = [os.path.join("/dev", n) for n in os.listdir("/dev") if n.startswith("nvidia")]
    print("abi", landlock.restrict(ro, ["/tmp"], devs), flush=True)
if mode.startswith("import"):
    try:
        t = pickle.loads(blob); print("child import ok", t.sum().item(), flush=True); t.add_(1); torch.cuda.synchronize()
    except Exception as e:
        print("child import FAILED", type(e).__name__, str(e)[:120], flush=True)
else:
    t = torch.full((1024,), 3.0, device="cuda")
    from multiprocessing.reduction import ForkingPickler
    import io; b = io.BytesIO(); ForkingPickler(b).dump(t); print("HANDLE", b.getvalue().hex(), flush=True)
    sys.stdin.readline()
'''

def run(mode):
    t = torch.ones(1024, device="cuda")
    b = io.BytesIO(); ForkingPickler(b).dump(t)
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "ROOT": os.getcwd()}, start_new_session=True)
    p.stdin.write(b.getvalue().hex() + "\n"); p.stdin.flush()
    if mode.startswith("import"):
        try:
            out, _ = p.communicate(timeout=25)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9); out, _ = p.communicate()
            out += " [TIMED OUT]"
        torch.cuda.synchronize()
        print(mode, "|", out.strip().replace("\n", " | "), "| parent sees", t[0].item(), flush=True)
    else:
        import select
        if not select.select([p.stdout], [], [], 25)[0]:
            os.killpg(p.pid, 9); print(mode, "| child TIMED OUT"); return
        line = p.stdout.readline()
        while line and not line.startswith("HANDLE"):
            print(mode, "|", line.strip()); line = p.stdout.readline()
        try:
            child_tensor = pickle.loads(bytes.fromhex(line.split()[1]))
            print(mode, "| parent import of child's tensor ok:", child_tensor.sum().item())
        except Exception as e:
            print(mode, "| parent import FAILED", type(e).__name__, str(e)[:120])
        p.stdin.write("\n"); p.stdin.flush(); p.wait()

print("start", flush=True)
print("ptrace_scope", open("/proc/sys/kernel/yama/ptrace_scope").read().strip() if os.path.exists("/proc/sys/kernel/yama/ptrace_scope") else "n/a")
for mode in ("import-plain", "import-landlock", "export-plain", "export-landlock"):
    run(mode)
