# py_code_reuse.py CUDART — 50 modules compiled at run time (as a notebook
# cell or generated code is), each allocating once from its own file
# gen_NNN.py and then dropped: a freed code object's address is reused by
# the next one. Allocation i is (i + 1) * 4 KiB.
import ctypes
import gc
import sys

rt = ctypes.PyDLL(sys.argv[1])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
keep = []


def alloc(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), n) == 0
    keep.append(p)


for i in range(50):
    scope = {"alloc": alloc}
    exec(compile("def f():\n    alloc(%d)\nf()\n" % (4096 * (i + 1)), "gen_%03d.py" % i, "exec"), scope)
    del scope
    gc.collect()
print("py_code_reuse: done")
