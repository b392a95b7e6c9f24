<?php
// Seed 000 (php + predis, "November's chopin"): the Lock class, its two Lua
// scripts verbatim (minus redis.log lines), run with php-redis instead of
// predis (same EVAL). Kept as written:
//  - time() is whole seconds; ARGV = time()+LOCK_EXPIRE+1, LOCK_EXPIRE, time();
//  - the GETSET branch writes expired + expire + 1 (the expiry counted twice);
//  - at most LOCK_RETRY_MAX = 3 attempts; result 2 sleeps sleep(LOCK_SLEEP):
//    PHP's sleep() takes whole seconds, so 0.3 sleeps 0 (PHP 8 warns that the
//    float is truncated) — the real runtime's behaviour, which the Go port
//    (lua-getset, 300 ms) deliberately does not copy;
//  - unlock deletes only a key whose timestamp has already passed, and
//    reports nothing.
// LOCK_EXPIRE defaults to 3 s; a scenario's ttl is rounded up to seconds.
// Failpoints reuse the Go port's names (lua-getset/...).
require __DIR__ . '/lockstorm_client.php';
error_reporting(E_ALL & ~E_DEPRECATED);

const LOCK_SCRIPT = <<<LUA
local key_lock = KEYS[1]
local key_lock_expired = tonumber(ARGV[1])
local key_lock_expire = tonumber(ARGV[2])
local time_now = tonumber(ARGV[3])
local res = redis.call('SETNX', key_lock, key_lock_expired)
if (res == 1) then
redis.call('EXPIRE', key_lock, key_lock_expire + 1)
return 0
end
local expired = redis.call('GET', key_lock)
if (not expired) then
return 1
end
expired = tonumber(expired)
if (expired > time_now) then
return 2
end
local key_lock_expired_new = key_lock_expired + key_lock_expire + 1
local expired_old = tonumber(redis.call('GETSET', key_lock, key_lock_expired_new))
if (expired_old == expired) then
redis.call('EXPIRE', key_lock, key_lock_expire + 1)
return 0
end
return 3
LUA;

const UNLOCK_SCRIPT = <<<LUA
local key_lock = KEYS[1]
local time_now = tonumber(ARGV[1])
local key_lock_expired = redis.call('GET', key_lock)
if (key_lock_expired and tonumber(key_lock_expired) <= time_now) then
redis.call('DEL', key_lock)
end
LUA;

$LOCK_EXPIRE = (int)ceil(lockstorm_opt('TTL', 3));
$LOCK_RETRY_MAX = (int)(getenv('LOCKSTORM_RETRY_COUNT') ?: 3);
$LOCK_SLEEP = lockstorm_opt('RETRY_DELAY', 0.3);
$client = $LOCKSTORM_NODES ? lockstorm_connect() : null;

function acquire_once($key) {
    global $client, $LOCK_EXPIRE;
    lockstorm_point('lua-getset/before-lock');
    $t = time();
    $res = $client->eval(LOCK_SCRIPT, [$key, $t + $LOCK_EXPIRE + 1, $LOCK_EXPIRE, $t], 1);
    if ($res === false) {
        throw new RuntimeException('EVAL: ' . $client->getLastError());
    }
    lockstorm_point('lua-getset/after-lock');
    return [$res, $t + $LOCK_EXPIRE + 1];
}

// Lock::lock(): while (0 != ($res = acquire()) && LOCK_RETRY_MAX > $retry).
function lock($key) {
    global $LOCK_RETRY_MAX, $LOCK_SLEEP;
    $retry = 1;
    while (0 != ([$res, $token] = acquire_once($key))[0] && ($LOCK_RETRY_MAX > $retry)) {
        2 == $res && sleep($LOCK_SLEEP);
        $retry++;
    }
    if (0 != $res) {
        throw new LockFail("lock script returned $res after $retry attempts");
    }
    return (string)$token;
}

// Lock::unlock(): reports nothing.
function unlock($key, $token) {
    global $client;
    lockstorm_point('lua-getset/before-unlock');
    if ($client->eval(UNLOCK_SCRIPT, [$key, time()], 1) === false && $client->getLastError()) {
        throw new RuntimeException('EVAL: ' . $client->getLastError());
    }
}

lockstorm_serve('name=php-seed000 summary=seed%20000%27s%20PHP%20Lock%20(Lua%20SETNX/GETSET,%20seconds) '
    . 'points=lua-getset/before-lock,lua-getset/after-lock,lua-getset/before-unlock '
    . 'topology=single expiry=client-clock release=expired-only whole_seconds=true server_ttl=true', 'lock', 'unlock');
