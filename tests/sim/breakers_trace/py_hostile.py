# py_hostile.py CUDART — allocates through the simulated CUDA runtime from
# functions whose source file names are hostile: a name with newlines and
# the word __proto__ on a line of its own, a name that is not UTF-8 (bytes
# 0xff 0xfe, as os.fsdecode gives them), and one with a quote, a backslash
# and </script>. Each allocation's size (1, 2, 3 MiB) tells which.
import ctypes
import os
import sys

rt = ctypes.PyDLL(sys.argv[1])   # keeps the GIL: lmshim reads the frames
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
keep = []


def alloc(n):
    p = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(p), n) == 0
    keep.append(p)


NAMES = ["a\n__proto__\nb.py", os.fsdecode(b"bad\xff\xfe.py"), 'q"uote\\</script>.py']
for i, name in enumerate(NAMES):
    code = compile("def hostile():\n    alloc(%d << 20)\n" % (i + 1), name, "exec")
    scope = {"alloc": alloc}
    exec(code, scope)
    scope["hostile"]()
print("py_hostile: done")
