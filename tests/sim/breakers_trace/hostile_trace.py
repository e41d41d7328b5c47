# hostile_trace.py OUT — writes a trace by hand whose every string is
# hostile to a web page: the header's LMS_POLICY is "__proto__", LMS_LIMIT,
# a kernel name, a module path and function names hold </script>, frames
# are named like Object's members.
import json
import sys

lines = [
    {"type": "header", "format": 1, "lmshim": "0", "pid": 1, "rank": 0, "t": 1000, "path": sys.argv[1],
     "parent": -1, "options": {"LMS_POLICY": "__proto__", "LMS_LIMIT": "</script><i>"}},
    {"type": "device", "t": 1000, "dev": 0, "physical": 1 << 30, "budget": 1 << 29},
    {"type": "site", "t": 1001, "id": 0, "dropped": 0,
     "py": [{"file": "constructor", "line": 1, "fn": "__proto__"}],
     "frames": [{"pc": "0x10", "module": "/no/such/</script>", "offset": "0x10", "fn": "toString"}]},
    {"type": "alloc", "t": 1002, "dev": 0, "ptr": "0x1000", "size": 1 << 20, "charge": 1 << 20,
     "place": "device", "id": -1, "fallback": False, "site": 0},
    {"type": "alloc", "t": 1003, "dev": 0, "ptr": "0x200000", "size": 2 << 20, "charge": 0,
     "place": "managed", "id": 0, "fallback": False, "site": 0},
    {"type": "launch", "t": 1004, "dev": 0, "seq": 0, "fn": "0x5", "name": "</script><script>alert(1)</script>",
     "stream": "0x0", "chunks": [0], "dropped": 0},
    {"type": "prefetch", "t": 1005, "dev": 0, "id": 0, "bytes": 2 << 20, "ahead": False},
]
with open(sys.argv[1], "w") as f:
    for line in lines:
        f.write(json.dumps(line) + "\n")
