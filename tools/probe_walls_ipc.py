"""Which walls keep CUDA IPC (memory and events) working: the child imports the parent's memory and event under each namespace and uid (docs/sealing.md). GPU only."""
import io
import json
import os
import pickle
import subprocess
import sys


def sh(c):
    r = subprocess.run(c, shell=True, capture_output=True, text=True); return (r.stdout + r.stderr).strip()[-600:]
if len(sys.argv) > 1 and sys.argv[1] == "child":
    from multiprocessing.reduction import ForkingPickler

    import torch
    import torch.multiprocessing
    out = {"uid": os.getuid(), "pid": os.getpid(), "nprocs": len([p for p in os.listdir('/proc') if p.isdigit()])}
    try:
        t = pickle.loads(open(sys.argv[2], "rb").read())
        t.fill_(7); torch.cuda.synchronize(); out["mem"] = "ok"
    except Exception as e:
        out["mem"] = repr(e)[:200]
    try:
        h = open(sys.argv[3], "rb").read()
        ev = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), h)
        s = torch.cuda.Stream(); s.wait_event(ev); torch.cuda.synchronize(); out["event"] = "ok"
    except Exception as e:
        out["event"] = repr(e)[:200]
    try:
        import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("127.0.0.1", 9)); out["udp"] = "sent"
    except Exception as e:
        out["udp"] = repr(e)[:100]
    print("RESULT " + json.dumps(out)); sys.exit(0)
info = {}
info["id"] = sh("id"); info["kernel"] = sh("uname -r"); info["lsm"] = sh("cat /sys/kernel/security/lsm")
info["cgroup_mounts"] = sh("mount | grep cgroup"); info["self_cgroup"] = sh("cat /proc/self/cgroup")
info["cgroup2_controllers"] = sh("cat /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/cgroup.subtree_control 2>&1")
info["seccomp"] = sh("ldconfig -p | grep -i seccomp; python3 -c 'import seccomp' 2>&1 | tail -1")
info["userns"] = sh("cat /proc/sys/user/max_user_namespaces /proc/sys/kernel/unprivileged_userns_clone 2>&1")
info["tools"] = sh("which unshare setpriv nsenter capsh; unshare --version")
info["devnv"] = sh("ls -l /dev/nvidia*")
info["python"] = sys.executable + " " + sh("python3 -c 'import torch,triton,sys;print(torch.__file__, triton.__file__, sys.prefix)'")
info["cwd"] = os.getcwd(); info["cwd_perms"] = sh("namei -m $PWD")
info["nobody"] = sh("setpriv --reuid 65534 --regid 65534 --clear-groups python3 -c 'import torch; print(torch.cuda.is_available())' 2>&1 | tail -2")
info["nobody_pkg"] = sh(f"setpriv --reuid 65534 --regid 65534 --clear-groups ls {os.getcwd()}/pytest_nodus 2>&1 | head -2")
for k, v in info.items(): print(f"== {k}: {v}")
from multiprocessing.reduction import ForkingPickler

import torch
import torch.multiprocessing

t = torch.zeros(1 << 20, device="cuda"); buf = io.BytesIO(); ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(t)
d = "/dev/shm/nsprobe"; os.makedirs(d, exist_ok=True); os.chmod(d, 0o777)
open(f"{d}/mem", "wb").write(buf.getvalue()); ev = torch.cuda.Event(interprocess=True); ev.record(); torch.cuda.synchronize()
open(f"{d}/ev", "wb").write(bytes(ev.ipc_handle()))
for p in os.listdir(d): os.chmod(f"{d}/{p}", 0o644)
me = os.path.abspath(__file__)
os.chmod(os.path.dirname(me), 0o755); os.chmod(me, 0o644)
cmd = f"python3 {me} child {d}/mem {d}/ev"
variants = {
  "plain": cmd,
  "netns": f"unshare --net {cmd}",
  "pidns": f"unshare --pid --fork --mount-proc {cmd}",
  "ipcns": f"unshare --ipc {cmd}",
  "mntns": f"unshare --mount {cmd}",
  "userns_root": f"unshare --user --map-root-user {cmd}",
  "userns_net_pid": f"unshare --user --map-root-user --net --pid --fork --mount-proc {cmd}",
  "nobody": f"setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs {cmd}",
  "net_pid_nobody": f"unshare --net --pid --fork --mount-proc setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs {cmd}",
  "net_nobody": f"unshare --net --mount setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs {cmd}",
}
for name, c in variants.items():
    t.zero_(); torch.cuda.synchronize()
    out = sh(c + " 2>&1 | grep RESULT || true")
    print(f"-- {name}: {out}  parent_sees={t[0].item()}")
print("== cgroup2 write:", sh("d=/sys/fs/cgroup/nodus-probe; mkdir -p $d && ls $d | tr '\\n' ' ' && echo && sh -c 'echo $$ > '$d'/cgroup.procs; cat /proc/self/cgroup; sleep 0.2' && cat $d/cpu.stat && echo 1 > $d/cgroup.freeze && cat $d/cgroup.events; rmdir $d"))
print("== nested cgroup of self:", sh("cat /proc/self/cgroup; ls /sys/fs/cgroup/$(cut -d: -f3 /proc/self/cgroup | head -1) | head -30 | tr '\\n' ' '"))
