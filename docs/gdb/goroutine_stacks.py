# Counts a Go process's live goroutines by start function, wait reason
# and stack size (stack.hi - stack.lo), largest groups first: which
# goroutines hold which stacks (docs/design.md, "Stack depth").
#
#   gdb -p PID -batch -ex 'source docs/gdb/goroutine_stacks.py'
#
# The binary needs its DWARF (the default for go build). Wait reasons
# are runtime.waitReason values (2: IO wait, 18: select).
import gdb
from collections import Counter

allgs = gdb.parse_and_eval("'runtime.allgs'")
count = Counter()
names = {}
for i in range(int(allgs['len'])):
    g = allgs['array'][i].dereference()
    if int(g['atomicstatus']['value']) == 6:  # _Gdead
        continue
    pc = int(g['startpc'])
    if pc not in names:
        try:
            names[pc] = gdb.execute("info symbol %d" % pc, to_string=True).split()[0]
        except gdb.error:
            names[pc] = hex(pc)
    size = int(g['stack']['hi']) - int(g['stack']['lo'])
    count[(names[pc], int(g['waitreason']), size)] += 1
for (name, reason, size), n in count.most_common(25):
    print("%6d  %-90s wait %2d  stack %6d" % (n, name, reason, size))
