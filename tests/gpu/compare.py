"""compare.py — what tests/gpu/run.sh concludes from two runs' outputs.

    python3 compare.py losses FILE_WITHOUT FILE_WITH   equal "losses" lines (relative 1e-5)
    python3 compare.py field FILE KEY                  the number after KEY on its line ("-" if none)
    python3 compare.py placements STDERR_FILE          "device=N managed=M" from an lmshim summary
    python3 compare.py selftest                        checks the three above on made-up outputs

Exit status 0 when the comparison holds (or the value was found), 1 otherwise.
"""
import os
import re
import sys
import tempfile


def losses_of(text):
    """The floats of the first line starting with "losses", or None."""
    for line in text.splitlines():
        if line.startswith("losses"):
            try:
                return [float(v) for v in line.split()[1:]]
            except ValueError:
                return None
    return None


def same_losses(a, b, rel=1e-5):
    """True when both runs printed the same number of losses, each equal
    within `rel` of its size (at least 1)."""
    return (a is not None and b is not None and len(a) == len(b) and len(a) > 0 and
            all(abs(x - y) <= rel * max(1.0, abs(x)) for x, y in zip(a, b)))


def field(text, key):
    """The token after `key` on the first line that has it, or "-"."""
    for line in text.splitlines():
        words = line.split()
        for i, w in enumerate(words[:-1]):
            if w == key:
                return words[i + 1]
    return "-"


def placements(text):
    """Device and managed allocation counts from lmshim's exit summary
    (LMS_STATS=1): the lines "  device N ..." and "  managed N ...", summed
    over devices."""
    dev = sum(int(m.group(1)) for m in re.finditer(r"^  device +(\d+)", text, re.M))
    man = sum(int(m.group(1)) for m in re.finditer(r"^  managed +(\d+)", text, re.M))
    return f"device={dev} managed={man}"


def selftest():
    a = "losses 1.5 2.25 3\nseconds 1.0\n"
    assert same_losses(losses_of(a), losses_of("losses 1.5 2.25 3.00000001\n"))
    assert not same_losses(losses_of(a), losses_of("losses 1.5 2.25 3.1\n"))
    assert not same_losses(losses_of(a), losses_of("losses 1.5 2.25\n"))
    assert not same_losses(losses_of(a), None)
    assert field(a, "seconds") == "1.0" and field(a, "nope") == "-"
    assert field("footprint_mib 900 images_per_s 4.5 seconds 2.0", "images_per_s") == "4.5"
    summary = ("lmshim summary, device 0 (budget 2G):\n"
               "  place        allocs        bytes         peak\n"
               "  device           4         2G           2G\n"
               "  managed          4         2G           2G\n")
    assert placements(summary) == "device=4 managed=4", placements(summary)
    assert placements("") == "device=0 managed=0"
    print("compare.py selftest ok")


def main(argv):
    if len(argv) >= 2 and argv[1] == "selftest":
        selftest()
        return 0
    read = lambda p: open(p, errors="replace").read() if os.path.exists(p) else ""
    if len(argv) == 4 and argv[1] == "losses":
        a, b = losses_of(read(argv[2])), losses_of(read(argv[3]))
        ok = same_losses(a, b)
        print("losses match" if ok else f"losses differ: without {a} with {b}")
        return 0 if ok else 1
    if len(argv) == 4 and argv[1] == "field":
        v = field(read(argv[2]), argv[3])
        print(v)
        return 0 if v != "-" else 1
    if len(argv) == 3 and argv[1] == "placements":
        print(placements(read(argv[2])))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
