"""redis-py's own lock, redis.lock.Lock (Debian's python3-redis), as a
lockstorm client process:

    /usr/bin/python3 redis_py.py [extend|reacquire]

Called as its docstrings show (redis/lock.py; the README points there): one
Lock per key, made once with r.lock(name, timeout=..., sleep=...,
blocking_timeout=...) and kept, as a program's module-level lock is; the
token in thread-local storage (thread_local=True, the default); acquire()
blocks, polling every `sleep`, until it wins or blocking_timeout is spent
(False); release(); and, per the argument, extend(ttl, replace_ttl=True)
("replace the lock's ttl", extend's docstring) or reacquire() ("Resets a
TTL of an already acquired lock back to a timeout value"), which can only
reset to the Lock's own timeout, so an extend to another TTL is an error.
Options: timeout = the scenario's ttl (10 s unset: the library has no
default, and a Lock without timeout never expires and cannot extend),
sleep = retry_delay (the library's 0.1 s), blocking_timeout = wait_timeout
(10 s unset).

Claims, from the docstrings and the lines they rest on (redis/lock.py of
4.3.4): "a maximum life for the lock" (__init__'s timeout) is SET NX PX on
one node (do_acquire, 217-225): one node, expiry on the server. The token is
a uuid1 (acquire, 194-195); the thread_local docstring (110-127) promises a
thread sees only its own token, so it cannot "release the thread-2's lock";
release (245-259) runs LUA_RELEASE_SCRIPT (27-34), a compare-and-delete, and
raises LockNotOwnedError when the key is not ours: an owner-checked release.
extend and reacquire (261-307) run compare-and-pexpire scripts (42-74) and
raise LockNotOwnedError when the key is not ours (a definite no). No
validity: acquire returns a bare True; no fencing; not reentrant (a second
acquire of the same Lock sets a new token with SET NX, refused while the
key exists)."""
import os
import sys
from urllib.parse import quote

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'clients'))
import lockstorm_client as ls  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else 'extend'
if MODE not in ('extend', 'reacquire'):
    sys.exit('usage: redis_py.py [extend|reacquire]')
TTL = ls.opt_ms('TTL', 10)
SLEEP = ls.opt_ms('RETRY_DELAY', 0.1)
WAIT = ls.opt_ms('WAIT_TIMEOUT', 10)
r = ls.connect() if ls.NODES else None
locks = {}  # key → its Lock, made on first use and kept


def lock_for(key):
    if key not in locks:
        locks[key] = r.lock(key, timeout=TTL, sleep=SLEEP, blocking_timeout=WAIT)
    return locks[key]


def holding(key, token):
    """The key's Lock when token is the one this thread holds, else a
    definite no (nothing is sent)."""
    lock = locks.get(key)
    if lock is None or lock.local.token is None or lock.local.token.decode() != token:
        raise ls.Fail('not the token this thread holds')
    return lock


def acquire(key):
    lock = lock_for(key)
    if not lock.acquire():
        raise ls.Fail('blocking_timeout of %.3f s spent' % WAIT)
    return lock.local.token.decode()


def release(key, token):
    try:
        holding(key, token).release()
    except ls.redis.exceptions.LockNotOwnedError as e:
        raise ls.Fail(str(e))


def extend(key, token, ttl):
    lock = holding(key, token)
    try:
        if MODE == 'reacquire':
            if abs(ttl - TTL) > 0.0005:
                raise ValueError('reacquire resets to the timeout (%.3f s), not %.3f s' % (TTL, ttl))
            lock.reacquire()
        else:
            lock.extend(ttl, replace_ttl=True)
    except ls.redis.exceptions.LockNotOwnedError as e:
        raise ls.Fail(str(e))


name = 'redis-py%s@%s' % ('-reacquire' if MODE == 'reacquire' else '', ls.redis.__version__)
summary = 'redis-py %s redis.lock.Lock, blocking acquire, %s' % (
    ls.redis.__version__, 'reacquire()' if MODE == 'reacquire' else 'extend(ttl, replace_ttl=True)')
ls.serve('name=%s summary=%s nodes=1 topology=single expiry=server release=owner-checked'
         % (name, quote(summary)), acquire, release, extend)
