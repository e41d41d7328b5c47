# py_alloc.py CUDART — allocates through the simulated CUDA runtime via
# ctypes from two Python functions. PyDLL keeps the GIL across the call (as
# a framework's allocation does), so lmshim can read the Python frames.
import ctypes
import sys

rt = ctypes.PyDLL(sys.argv[1])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]


def make_weights():
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), 3 << 20) == 0  # WEIGHTS_LINE
    return p


def make_activations():
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), 5 << 20) == 0  # ACTIVATIONS_LINE
    return p


def step():
    return make_weights(), make_activations()


if __name__ == "__main__":
    step()
    print("py_alloc: done")
