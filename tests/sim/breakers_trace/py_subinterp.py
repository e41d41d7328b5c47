# py_subinterp.py CUDART — allocations after a sub-interpreter has run
# (which turns PyGILState_Check's answer into "yes" for every thread): a
# sub-interpreter's allocation (7 MiB; where ctypes loads there), eight threads allocating with the
# GIL released (ctypes.CDLL, 9 MiB each), and one with the GIL held
# (ctypes.PyDLL, 3 MiB, from the function `held`). Exits 77 when this
# Python has no sub-interpreter module.
import ctypes
import sys
import threading

try:
    import _xxsubinterpreters as subinterpreters
except ImportError:
    sys.exit(77)

lib = sys.argv[1]
SUB = """
import ctypes
rt = ctypes.PyDLL(%r)
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
p = ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(p), 7 << 20) == 0
""" % lib

interp = subinterpreters.create()
try:
    subinterpreters.run_string(interp, SUB)
except subinterpreters.RunFailedError:   # 3.12: no ctypes in a sub-interpreter
    subinterpreters.run_string(interp, "x = 1")
subinterpreters.destroy(interp)

released = ctypes.CDLL(lib)
held_lib = ctypes.PyDLL(lib)
for f in (released, held_lib):
    f.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
keep = []


def without_gil():
    for _ in range(20):
        p = ctypes.c_void_p()
        assert released.cudaMalloc(ctypes.byref(p), 9 << 20) == 0
        keep.append(p)


def held():
    p = ctypes.c_void_p()
    assert held_lib.cudaMalloc(ctypes.byref(p), 3 << 20) == 0
    keep.append(p)


threads = [threading.Thread(target=without_gil) for _ in range(8)]
for t in threads:
    t.start()
held()
for t in threads:
    t.join()
print("py_subinterp: done")
