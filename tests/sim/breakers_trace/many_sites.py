# many_sites.py OUT SITES ALLOCS — writes a trace of SITES allocation
# sites and ALLOCS allocations and frees, each from the last site
# described (a hand-made trace: lmshim writes at most 7168 sites).
import sys

out, sites, allocs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(out, "w") as f:
    f.write('{"type":"header","format":1,"lmshim":"0","pid":1,"rank":0,"t":1000,"path":"x","parent":-1,'
            '"options":{}}\n')
    f.write('{"type":"device","t":1000,"dev":0,"physical":1073741824,"budget":536870912}\n')
    for s in range(sites):
        f.write('{"type":"site","t":1001,"id":%d,"py":[],"frames":[],"dropped":0}\n' % s)
    t = 2000
    for i in range(allocs):
        t += 1
        f.write('{"type":"alloc","t":%d,"dev":0,"ptr":"0x1000","size":4096,"charge":4096,"place":"device",'
                '"id":-1,"fallback":false,"site":%d}\n{"type":"free","t":%d,"dev":0,"ptr":"0x1000","size":4096,'
                '"place":"device"}\n' % (t, sites - 1, t))
