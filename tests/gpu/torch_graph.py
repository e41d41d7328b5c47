"""torch_graph.py — a PyTorch training step (forward, backward, SGD step)
captured whole in a CUDA graph (torch.cuda.graph) and replayed on new data:
prints the losses of the replays and the wall time, so that a run under
lmshim with a budget below the step's footprint (some of its memory then in
managed chunks) can be compared with one without lmshim.

usage: torch_graph.py [replays]     (default 5; about 3 GiB of memory)
"""
import sys
import time

import torch

replays = int(sys.argv[1]) if len(sys.argv) > 1 else 5
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
width, depth, batch = 4096, 8, 8192     # 8 x 8192 x 4096 x 4 B = 1 GiB of activations, 512 MiB of weights
model = torch.nn.Sequential(*[m for _ in range(depth) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())])
model = model.to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
data = [(torch.randn(batch, width, device=dev), torch.randn(batch, width, device=dev)) for _ in range(replays)]
static_x = torch.zeros(batch, width, device=dev)
static_y = torch.zeros(batch, width, device=dev)

# Warm up on a side stream, as capture requires, then capture one whole step.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(static_x), static_y).backward()
        opt.step()
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
opt.zero_grad(set_to_none=True)
with torch.cuda.graph(graph):
    static_loss = torch.nn.functional.mse_loss(model(static_x), static_y)
    static_loss.backward()
    opt.step()

torch.cuda.synchronize()
t0 = time.time()
losses = []
for x, y in data:
    static_x.copy_(x)
    static_y.copy_(y)
    graph.replay()
    losses.append(static_loss.item())
torch.cuda.synchronize()
print("losses", " ".join(f"{v:.9g}" for v in losses))
print(f"seconds {time.time() - t0:.3f} peak_allocated {torch.cuda.max_memory_allocated()}")
