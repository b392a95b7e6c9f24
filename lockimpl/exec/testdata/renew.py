# A minimal lock with a renewal thread (a watchdog): SET NX PX, then a
# thread that PEXPIREs the key every ttl/3 while it is still ours. A test
# stops the process and watches the renewal stop with it.
import os, sys, threading, time
sys.path.append('/usr/lib/python3/dist-packages')
import redis
host, port = os.environ['LOCKSTORM_NODES'].split(',')[0].split(':') if os.environ.get('LOCKSTORM_NODES') else ('', 0)
ttl = int(os.environ.get('LOCKSTORM_TTL_MS') or 1000)
r = redis.Redis(host=host, port=int(port)) if host else None

def renew(key, token):
    while True:
        time.sleep(ttl / 3000.0)
        if r.get(key) != token.encode():
            return
        r.pexpire(key, ttl)

for line in sys.stdin:
    f = line.split()
    if f[0] == 'hello':
        print('hello 1 name=renew topology=single expiry=server release=owner-checked renewal=true', flush=True)
    elif f[0] == 'acquire':
        token = 'c%s-%d' % (os.environ.get('LOCKSTORM_CLIENT'), time.monotonic_ns())
        if r.set(f[1], token, nx=True, px=ttl):
            threading.Thread(target=renew, args=(f[1], token), daemon=True).start()
            print('ok ' + token, flush=True)
        else:
            print('fail held', flush=True)
