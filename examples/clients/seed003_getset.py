"""Seed 003 (使用Redis SETNX命令实现分布式锁, lihao21): the SETNX / GET / GETSET
lock, as its Python listing writes it, bugs included:
  - values are whole seconds, int(time.time()) + LOCK_TIMEOUT + 1;
  - the lock is won when SETNX returns 1, or when `now > int(GET)` and
    `now > int(GETSET new)` (the old value was expired, whoever's it was);
  - int(None) raises TypeError when the key vanished between SETNX and GET
    (or GETSET): the original loop is left by that exception, not holding;
  - retry every 0.001 s, forever (the harness bounds the wait: its own
    LOCKSTORM_WAIT_TIMEOUT_MS, 10 s by default);
  - release deletes only `if now < lock_timeout` by this client's clock.
LOCK_TIMEOUT defaults to 3 s; a scenario's ttl is rounded up to seconds.
Failpoints reuse the Go port's names (getset/...) so the same schedules
drive both."""
import math
import time

import lockstorm_client as ls

LOCK_TIMEOUT = math.ceil(ls.opt_ms('TTL', 3))
SLEEP = ls.opt_ms('RETRY_DELAY', 0.001)
WAIT = ls.opt_ms('WAIT_TIMEOUT', 10)
redis_client = ls.connect() if ls.NODES else None
lock_timeouts = {}


def acquire(lock_key):
    deadline = time.monotonic() + WAIT
    while True:
        ls.point('getset/before-setnx')
        now = int(time.time())
        lock_timeout = now + LOCK_TIMEOUT + 1
        lock = redis_client.setnx(lock_key, lock_timeout)
        ls.point('getset/after-setnx')
        try:
            # `lock == 1 or (now > int(get)) and now > int(getset(...))`,
            # one step at a time so the points sit between the commands.
            won = lock == 1
            if not won:
                cur = redis_client.get(lock_key)
                ls.point('getset/after-get')
                if now > int(cur):
                    ls.point('getset/before-getset')
                    old = redis_client.getset(lock_key, lock_timeout)
                    ls.point('getset/after-getset')
                    won = now > int(old)
        except TypeError as e:
            raise ls.Fail('int(None): the key vanished (seed 003 leaves its loop with %s)' % e)
        if won:
            lock_timeouts[lock_key] = lock_timeout
            return str(lock_timeout)
        if time.monotonic() >= deadline:
            raise ls.Fail('wait budget of %.3f s spent' % WAIT)
        time.sleep(SLEEP)


def release(lock_key, token):
    ls.point('getset/before-release')
    now = int(time.time())
    lock_timeout = int(token)
    if now < lock_timeout:
        if redis_client.delete(lock_key) == 0:
            raise ls.Fail('DEL deleted nothing')
        return
    raise ls.Fail('own timeout passed (%d >= %d): not deleting' % (now, lock_timeout))


ls.serve('name=py-seed003 summary=seed%20003%27s%20Python%20SETNX/GETSET%20lock%20(whole%20seconds) '
         'points=getset/before-setnx,getset/after-setnx,getset/after-get,getset/before-getset,'
         'getset/after-getset,getset/before-release topology=single expiry=client-clock release=time-checked '
         'whole_seconds=true',
         acquire, release)
