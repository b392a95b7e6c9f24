"""A lock with a bug planted in it, for lockstorm's own test of its battery
(examples/planted): SET NX PX with a random token, a Lua compare-and-delete
release, a grant whose reply took nearly the TTL given back, the lockstorm
protocol spoken through lockstorm_client. argv[1]
picks the variation; the author of each believes it correct, so each
declares the claims of the correct one (no argument, or 'ok'):

  get-then-del  release: GET, compare in Python, then DEL (two commands: the
                lock can change hands between them)
  time-token    token: the current second, the same for every client that
                acquires within it

Its points (declared in hello, announced when the harness asks) sit before
and after each Redis command, as a careful author adds them."""
import os
import sys
import time

import lockstorm_client as ls

BUG = sys.argv[1] if len(sys.argv) > 1 else 'ok'
if BUG not in ('ok', 'get-then-del', 'time-token'):
    sys.exit('planted_lock.py: unknown variation %r' % BUG)
NAME = 'planted-py' if BUG == 'ok' else 'planted-py-' + BUG
TTL_MS = int(ls.opt_ms('TTL', 10) * 1000)
DELAY = ls.opt_ms('RETRY_DELAY', 0.01)
WAIT = ls.opt_ms('WAIT_TIMEOUT', 10)
POINTS = ['before-set', 'after-set', 'before-release', 'after-get', 'after-release']
r = ls.connect() if ls.NODES else None

UNLOCK = r.register_script(
    'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end') if r else None


def point(step):
    ls.point('planted-py/' + step)


def token():
    if BUG == 'time-token':
        return str(int(time.time()))  # planted: one token per second
    return os.urandom(12).hex()


def acquire(key):
    tok = token()
    deadline = time.monotonic() + WAIT
    while True:
        point('before-set')
        sent = time.monotonic()
        ok = r.set(key, tok, nx=True, px=TTL_MS)
        point('after-set')
        if ok and (time.monotonic() - sent) * 1000 >= TTL_MS - TTL_MS / 10:
            # The reply came so late that the key has (nearly) expired (a
            # busy machine can deliver it after the TTL): not a lock to
            # trust. Give it back and try again, as the Go original does.
            UNLOCK(keys=[key], args=[tok])
            ok = False
        if ok:
            return tok
        if time.monotonic() >= deadline:
            raise ls.Fail('wait timeout of %.3f s spent' % WAIT)
        time.sleep(DELAY)


def release(key, tok):
    point('before-release')
    if BUG == 'get-then-del':  # planted: compare and delete in two commands
        v = r.get(key)
        point('after-get')
        n = r.delete(key) if v is not None and v.decode() == tok else 0
    else:
        n = UNLOCK(keys=[key], args=[tok])
    point('after-release')
    if n == 0:
        raise ls.Fail('not ours')


# grant_checked, grant_monotonic: acquire gives back a grant whose reply
# took nearly the TTL, timed on time.monotonic() from before the SET.
ls.serve('name=%s summary=planted%%20lock%%20(%s) points=%s topology=single expiry=server release=owner-checked'
         ' grant_checked=true grant_monotonic=true'
         % (NAME, BUG, ','.join('planted-py/' + p for p in POINTS)), acquire, release)
