"""torch_ipc.py — torch.multiprocessing shares a CUDA tensor with a spawned
child (CUDA IPC: cuIpcGetMemHandle in the parent, cuIpcOpenMemHandle in the
child), the child adds 1 to it in place, and the parent sees the change.
Prints "shared ok" and the wall time; exit status 1 if anything differs.

usage: torch_ipc.py [MiB]     (default 64)
"""
import sys
import time

import torch
import torch.multiprocessing as mp


def child(tensors, sums):
    t = tensors.get()
    t.add_(1)
    torch.cuda.synchronize()
    sums.put(float(t.sum().item()))
    del t


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    mp.set_start_method("spawn")
    t0 = time.time()
    n = mib << 18                     # float32 elements
    shared = torch.zeros(n, device="cuda")
    tensors, sums = mp.Queue(), mp.Queue()
    p = mp.Process(target=child, args=(tensors, sums))
    p.start()
    tensors.put(shared)
    child_sum = sums.get(timeout=90)
    p.join(60)
    torch.cuda.synchronize()
    parent_sum = float(shared.sum().item())
    ok = child_sum == n and parent_sum == n and p.exitcode == 0
    print(f"shared {'ok' if ok else 'FAIL'} elements {n} child_sum {child_sum} parent_sum {parent_sum} "
          f"child_exit {p.exitcode}")
    print(f"seconds {time.time() - t0:.3f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
