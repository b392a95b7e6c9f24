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
It forgets its token (252) before the round trip, so a release asked again
after a lost reply is refused by the Lock itself (LockError, 250-251): a
definite no, mapped as one (see release below).
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
    """The key's Lock, unless this thread holds another token on it: a
    definite no (nothing is sent). A Lock that holds no token (never
    acquired, released, or released with its reply lost) is handed to
    redis-py, whose own answer is what its user gets."""
    lock = locks.get(key)
    if lock is None or lock.local.token is not None and lock.local.token.decode() != token:
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
    except ls.redis.exceptions.LockError as e:
        # Both are redis-py's definite "not held" (lock.py of 4.3.4):
        # LockNotOwnedError when the compare-and-delete found another value
        # (do_release, 255-259); LockError "Cannot release an unlocked lock"
        # when the Lock holds no token (release, 245-251), said without
        # asking the server. release sets the token to None (252) before
        # its round trip (253), so after a lost reply the Lock answers the
        # second: its user is told the lock is not held while the key may
        # stand (redis-py #3847, the catalogue's entry 27). A lost reply
        # itself is a ConnectionError or TimeoutError: unknown.
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
    except ls.redis.exceptions.LockError as e:
        # LockNotOwnedError from the compare-and-pexpire scripts (do_extend
        # 278-288, do_reacquire 300-308), or LockError "Cannot extend (or
        # reacquire) an unlocked lock" when the Lock holds no token (272-273,
        # 294-295): redis-py's definite no either way.
        raise ls.Fail(str(e))


name = 'redis-py%s@%s' % ('-reacquire' if MODE == 'reacquire' else '', ls.redis.__version__)
summary = 'redis-py %s redis.lock.Lock, blocking acquire, %s' % (
    ls.redis.__version__, 'reacquire()' if MODE == 'reacquire' else 'extend(ttl, replace_ttl=True)')
ls.serve('name=%s summary=%s nodes=1 topology=single expiry=server release=owner-checked'
         % (name, quote(summary)), acquire, release, extend)
