"""cupy_pool.py — CuPy through its default memory pool: N buffers of M MiB
(default 8 x 512 MiB) filled and updated by kernels, half of them freed back
to the pool and allocated again (the pool reuses its blocks), every buffer
checked against NumPy. Prints a checksum line (equal with and without
lmshim), the pool's size and the wall time.

usage: cupy_pool.py [buffers [MiB each]]
"""
import sys
import time

import cupy as cp
import numpy as np

buffers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
mib = int(sys.argv[2]) if len(sys.argv) > 2 else 512
n = mib << 18                                  # float32 elements
pool = cp.get_default_memory_pool()
t0 = time.time()
arrays = [cp.full(n, i, dtype=cp.float32) for i in range(buffers)]
for step in range(3):
    for i, a in enumerate(arrays):
        a *= 2
        a += i
for i in range(0, buffers, 2):                 # back to the pool, then out of it again
    arrays[i] = None
for i in range(0, buffers, 2):
    arrays[i] = cp.full(n, 2 * i, dtype=cp.float32)
wrong = 0
sums = []
for i, a in enumerate(arrays):
    want = 2 * i if i % 2 == 0 else ((i * 2 + i) * 2 + i) * 2 + i
    head = cp.asnumpy(a[:4096])
    wrong += int(np.count_nonzero(head != want)) + int(cp.count_nonzero(a != want).get())
    sums.append(float(cp.sum(a, dtype=cp.float64).get()))
cp.cuda.Device().synchronize()
print("losses", " ".join(f"{s:.9g}" for s in sums))
print(f"{'ok' if wrong == 0 else 'FAIL'} wrong {wrong} pool_bytes {pool.total_bytes()}")
print(f"seconds {time.time() - t0:.3f}")
sys.exit(0 if wrong == 0 else 1)
