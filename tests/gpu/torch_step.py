"""torch_step.py — a PyTorch training step whose activations need about
6 GiB: prints the losses of a few seeded steps and the wall time, so that a
run under lmshim (LMS_LIMIT=3G) can be compared with one without it."""
import sys
import time

import torch

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
width, depth, batch = 8192, 12, 16384      # 12 layers x 16384 x 8192 x 4 B = 6 GiB of activations
layers = [torch.nn.Linear(width, width) for _ in range(depth)]
model = torch.nn.Sequential(*[m for l in layers for m in (l, torch.nn.ReLU())]).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(batch, width, device=dev)
y = torch.randn(batch, width, device=dev)
losses = []
torch.cuda.synchronize()
t0 = time.time()
for step in range(3):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
torch.cuda.synchronize()
free, total = torch.cuda.mem_get_info()
print("losses", " ".join(f"{v:.9g}" for v in losses))
print(f"seconds {time.time() - t0:.3f} peak_allocated {torch.cuda.max_memory_allocated()} total {total}")
sys.exit(0)
