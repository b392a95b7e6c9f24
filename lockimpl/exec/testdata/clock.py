# Replies to acquire with the wall clock it reads (time.time(), ms): what a
# skewed client clock looks like from inside a Python client.
import sys, time
for line in sys.stdin:
    f = line.split()
    if f[0] == 'hello':
        print('hello 1 name=clock-py', flush=True)
    elif f[0] == 'acquire':
        print('ok %d' % int(time.time() * 1000), flush=True)
