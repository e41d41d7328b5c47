#!/usr/bin/env python3
"""step_bound.py — a lower bound on the step time any residency schedule
can reach, for one workload under one budget.

Inputs: an lmshim trace (LMS_TRACE) of the workload run under lmshim, which
gives each launch's managed chunks, their charges and the room (the budget
less the device chunks), and a simulator timeline (SIMGPU_TIMELINE) of the
same workload run in memory, which gives each kernel's compute time; the
k-th kernel of the timeline is the k-th launch of the trace.

For a step of launches s..e-1 and each i in it: at the moment launch i
starts, at most `room` bytes of managed chunks are on the device, so at
least U(i) - room bytes of the chunks that launches i..e-1 use (U(i): their
distinct charges) must still cross the link (fetched, or read in place by
the kernel that needs them), after launches s..i-1 have computed and before
the step ends, while launches i..e-1 compute:

    step >= C(s..i-1) + max(C(i..e-1), max(0, U(i) - room) / link) The bound is the largest of these over i (copies
to the host, and the link's latency, only make a real schedule slower).
A byte read in place crosses the link as a fetched one does; the bound
counts one link for both, as on a GPU, and as the simulator does (a
kernel's reads over the link share the host-to-device direction with the
copy engine: docs/SIMULATOR.md, "The time model"). Every step must launch
the same kernels in the same order (checked), and there must be at least
two steps (the first is a warm-up). Input it cannot use ends it with one
line on stderr naming the file.

Usage: step_bound.py TRACE TIMELINE --steps N [--link-gbps 55]
Prints, per step after the first: the bound in ms, the i that gives it,
the compute of the step and the bytes that must cross in it.
"""
import argparse
import json
import sys

PAGE = 2 << 20


def read_trace(path):
    """Returns (launches as lists of chunk ids, charge per chunk id, room in bytes)."""
    charge, launches, budget, device_bytes = {}, [], None, 0
    live = {}
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            t = e.get("type")
            if t == "device" and e.get("dev") == 0:
                budget = e["budget"]
            elif t == "alloc" and e.get("dev") == 0:
                if e["place"] == "managed" and e["id"] >= 0:
                    if e["id"] in charge:
                        sys.exit("step_bound: %s: managed chunk id %d allocated twice (one process's trace "
                                 "never reuses an id)" % (path, e["id"]))
                    charge[e["id"]] = -(-e["size"] // PAGE) * PAGE   # charged in 2 MiB pages while resident
                elif e["place"] == "device":
                    live[e["ptr"]] = e["charge"]
                    device_bytes = max(device_bytes, sum(live.values()))
            elif t == "free" and e.get("dev") == 0 and e.get("place") == "device":
                live.pop(e["ptr"], None)
            elif t == "launch" and e.get("dev") == 0:
                launches.append([c for c in e["chunks"] if c in charge])
    if budget is None:
        sys.exit("step_bound: no device line in the trace")
    return launches, charge, budget - device_bytes


def read_compute(path):
    """Returns each kernel's compute time in ns and its name, in issue order."""
    out, names = [], []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) > 7 and parts[1] == "compute" and parts[6] == "kernel":
                fields = dict(p.split("=", 1) for p in parts[8:] if "=" in p)
                out.append(float(fields.get("compute", 0)) * 1e3)
                names.append(parts[7])
    return out, names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("timeline")
    ap.add_argument("--steps", type=int, required=True, help="steps the run made (the first is a warm-up)")
    ap.add_argument("--link-gbps", type=float, default=55.0)
    a = ap.parse_args()
    if a.steps < 2:
        sys.exit("step_bound: --steps %d: the first step is a warm-up, so at least 2 are needed" % a.steps)
    if not a.link_gbps > 0:
        sys.exit("step_bound: --link-gbps %s: not a bandwidth above 0" % a.link_gbps)
    try:
        launches, charge, room = read_trace(a.trace)
    except OSError as e:
        sys.exit("step_bound: %s: %s" % (a.trace, e.strerror or e))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        sys.exit("step_bound: %s: not an lmshim trace (%s: %s)" % (a.trace, type(e).__name__, e))
    try:
        compute, names = read_compute(a.timeline)
    except OSError as e:
        sys.exit("step_bound: %s: %s" % (a.timeline, e.strerror or e))
    except ValueError as e:
        sys.exit("step_bound: %s: not a simulator timeline (%s)" % (a.timeline, e))
    if not launches:
        sys.exit("step_bound: no launches on device 0 in the trace")
    if len(compute) != len(launches) or len(launches) % a.steps:
        sys.exit("step_bound: %d kernels in the timeline, %d launches in the trace, %d steps: they must agree"
                 % (len(compute), len(launches), a.steps))
    per = len(launches) // a.steps
    if any(names[k] != names[k % per] for k in range(len(names))):
        sys.exit("step_bound: the steps do not launch the same kernels in the same order (a step that varies "
                 "has no single bound here)")
    link = a.link_gbps  # bytes per ns
    print("room %.1f MiB, %d launches per step" % (room / 2**20, per))
    for step in range(1, a.steps):
        s, e = step * per, (step + 1) * per
        total = sum(compute[s:e])
        best, at, crossing = total, None, 0
        seen, u = set(), 0
        prefix = [0.0]
        for k in range(s, e):
            prefix.append(prefix[-1] + compute[k])
        for i in range(e - 1, s - 1, -1):   # U(i) grows as i goes back
            for c in launches[i]:
                if c not in seen:
                    seen.add(c)
                    u += charge[c]
            must = max(0, u - room)
            if must == 0:
                continue
            b = prefix[i - s] + max(total - prefix[i - s], must / link)
            if b > best:
                best, at, crossing = b, i - s, must
        print("step %d: bound %.3f ms (compute %.3f ms; from launch %s of the step, %.1f MiB must cross)"
              % (step, best / 1e6, total / 1e6, at, crossing / 2**20))


if __name__ == "__main__":
    main()
