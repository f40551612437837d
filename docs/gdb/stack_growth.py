# Prints, once per distinct path, the calls that grow a goroutine's
# stack to GROW_TO bytes (8192 by default): a breakpoint at the entry
# of runtime.copystack(gp, newsize), whose arguments are in RAX and RBX
# (amd64, register ABI), walking gp's frame pointers from g.sched.bp.
# "used" is how much of the stack the goroutine had in use.
#
#   addr=$(go tool nm BINARY | awk '$3=="runtime.copystack"{print $1}')
#   gdb -p PID -batch -ex "py COPYSTACK=0x$addr" \
#       -ex 'source docs/gdb/stack_growth.py'
#
# It detaches after MAX_HITS growths (400); START, when set, keeps only
# goroutines whose start function's name contains it. For a test binary, start it under gdb
# instead: gdb -batch -ex 'set args -test.run TestX' -ex "py
# COPYSTACK=0x$addr" -ex 'py RUN=True' -ex 'source …' BINARY.
import gdb

GROW_TO = globals().get("GROW_TO", 8192)
MAX_HITS = globals().get("MAX_HITS", 400)
START = globals().get("START", "")
seen = set()
hits = [0]


def symbol(pc):
    try:
        return gdb.execute("info symbol %d" % pc, to_string=True).split(" in section")[0]
    except gdb.error:
        return hex(pc)


def word(addr):
    return int.from_bytes(bytes(gdb.selected_inferior().read_memory(addr, 8)), "little")


class Growth(gdb.Breakpoint):
    def stop(self):
        if int(gdb.parse_and_eval("$rbx")) != GROW_TO:
            return False
        gp = int(gdb.parse_and_eval("$rax"))
        g = gdb.Value(gp).cast(gdb.lookup_type("runtime.g").pointer()).dereference()
        start = symbol(int(g["startpc"]))
        if START not in start:
            return False
        hi = int(g["stack"]["hi"])
        frames = [symbol(int(g["sched"]["pc"]))]
        bp = int(g["sched"]["bp"])
        while bp and bp < hi and len(frames) < 64:
            frames.append(symbol(word(bp + 8)))
            bp = word(bp)
        hits[0] += 1
        key = tuple(frames)
        if key not in seen:
            seen.add(key)
            print("=== to %d bytes in %s, %d bytes in use" % (GROW_TO, start, hi - int(g["sched"]["sp"])))
            for f in frames:
                print("    " + f)
        if hits[0] >= MAX_HITS:
            gdb.execute("detach")
        return False


Growth("*%d" % COPYSTACK)
gdb.execute("run" if globals().get("RUN") else "continue")
