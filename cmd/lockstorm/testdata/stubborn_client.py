# A client process that does not exit when lockstorm goes away: it ignores
# the end of its stdin and sleeps on. Only PR_SET_PDEATHSIG can end it when
# lockstorm is SIGKILLed. Its "lock" says yes to everything.
import sys, time
n = 0
for line in sys.stdin:
    f = line.split()
    if f[0] == 'hello':
        print('hello 1 name=stubborn', flush=True)
    elif f[0] == 'acquire':
        n += 1
        print('ok t%d' % n, flush=True)
    else:
        print('ok', flush=True)
while True:
    time.sleep(1)
