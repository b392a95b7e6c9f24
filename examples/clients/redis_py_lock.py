"""redis-py's own lock, redis.lock.Lock, as its users call it:
r.lock(name, timeout=..., sleep=..., blocking_timeout=...), lock.acquire(),
lock.release(). SET NX PX with a random token; release and extend are Lua
scripts that compare the token (LockNotOwnedError when it is not ours).
Options: timeout = the scenario's ttl (10 s when unset), sleep = retry_delay
(the library's 0.1 s when unset), blocking_timeout = wait_timeout (10 s when
unset). No failpoints: the library has none."""
import lockstorm_client as ls

TTL = ls.opt_ms('TTL', 10)
SLEEP = ls.opt_ms('RETRY_DELAY', 0.1)
WAIT = ls.opt_ms('WAIT_TIMEOUT', 10)
r = ls.connect() if ls.NODES else None
held = {}  # token → Lock


def acquire(key):
    lock = r.lock(key, timeout=TTL, sleep=SLEEP, blocking_timeout=WAIT)
    if not lock.acquire():
        raise ls.Fail('blocking_timeout of %.3f s spent' % WAIT)
    token = lock.local.token.decode()
    held[token] = lock
    return token


def release(key, token):
    lock = held.pop(token, None)
    if lock is None:
        raise ls.Fail('no such lock')
    try:
        lock.release()
    except ls.redis.exceptions.LockNotOwnedError as e:
        raise ls.Fail(str(e))


def extend(key, token, ttl):
    """Lock.extend(ttl, replace_ttl=True): its Lua script compares the token
    and sets the TTL to ttl from now."""
    lock = held.get(token)
    if lock is None:
        raise ls.Fail('no such lock')
    try:
        lock.extend(ttl, replace_ttl=True)
    except ls.redis.exceptions.LockNotOwnedError as e:
        raise ls.Fail(str(e))


ls.serve('name=redis-py-lock summary=redis-py%20redis.lock.Lock%20(SET%20NX%20PX,%20token%20compare) '
         'topology=single expiry=server release=owner-checked', acquire, release, extend)
