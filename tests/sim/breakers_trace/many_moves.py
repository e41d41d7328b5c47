# many_moves.py OUT CHUNKS MOVES — writes a trace of CHUNKS live managed
# chunks of 4 KiB and MOVES prefetch and evict lines over them (each chunk
# fetched, then evicted, in a scattered order), as a long run that keeps
# many managed chunks alive writes.
import sys

out, chunks, moves = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(out, "w") as f:
    f.write('{"type":"header","format":1,"lmshim":"0","pid":1,"rank":0,"t":1000,"path":"x","parent":-1,'
            '"options":{}}\n')
    f.write('{"type":"device","t":1000,"dev":0,"physical":1073741824,"budget":536870912}\n')
    t = 2000
    for i in range(chunks):
        t += 1
        f.write('{"type":"alloc","t":%d,"dev":0,"ptr":"0x%x","size":4096,"charge":0,"place":"managed",'
                '"id":%d,"fallback":false,"site":-1}\n' % (t, 0x100000 + i * 4096, i))
    for k in range(moves):
        t += 1
        f.write('{"type":"%s","t":%d,"dev":0,"id":%d,"bytes":4096,"ahead":false}\n'
                % ("prefetch" if k % 2 == 0 else "evict", t, (k // 2 * 7919) % chunks))
