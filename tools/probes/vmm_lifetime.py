"""The GPU arena's memory lives exactly as long as a tensor over it (shared/vmm.py). GPU only."""
import gc
import os

import torch

from pytest_nodus.shared import vmm

torch.zeros(1, device="cuda")
free_before = torch.cuda.mem_get_info()[0]
mapping, fd = vmm.create(1 << 30, 0)
os.close(fd)
view = mapping.tensor()[: 1 << 30]
del mapping
gc.collect()
view.fill_(7)
torch.cuda.synchronize()
kept = view[::4096].float().mean().item() == 7.0
held = (free_before - torch.cuda.mem_get_info()[0]) >> 20
del view
gc.collect()
torch.cuda.synchronize()
back = (free_before - torch.cuda.mem_get_info()[0]) >> 20
print(f"vmm lifetime: values kept after the mapping's last name went: {kept}; "
      f"MiB held with a view {held}, after it {back}")
