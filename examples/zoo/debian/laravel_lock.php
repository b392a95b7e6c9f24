<?php
// Laravel's cache lock over Redis (Debian's php-illuminate-cache and
// php-illuminate-redis, Laravel 8.83) as a lockstorm client process:
//   php laravel_lock.php
// Called as Laravel's documentation ("Atomic Locks": $lock =
// Cache::lock('foo', 10); $lock->block(5); ... $lock->release()) does,
// without the framework: Cache::lock on the redis store is a PhpRedisLock
// (Illuminate\Cache\RedisStore::lock) over a PhpRedisConnection with its
// connector (Laravel's PhpRedisConnector hands one over: a "went away"
// error reconnects, PhpRedisConnection::command), a new Lock, so a new
// owner, per acquire. Options are the library's (block polls every 250 ms,
// Lock::$sleepMilliseconds) but the scenario's ttl (seconds, rounded up:
// the lock takes whole seconds), retry_delay (betweenBlockedAttemptsSleepFor)
// and wait_timeout (block's seconds, rounded up; 10 s unset).
//
// Claims, from the docs ("the lock will automatically be released after 10
// seconds"; release "will only release the lock if it was acquired by the
// same owner") and the lines they rest on (8.83):
// - acquire is SET name owner EX seconds NX (RedisLock.php 35-42), the
//   owner Str::random() (Lock.php 50-59), the key the lock's name verbatim:
//   one node, expiry on the server, in whole seconds (PhpRedisLock's
//   constructor takes an int; EX): expiry=server whole_seconds=true.
// - release runs LuaScripts::releaseLock (LuaScripts.php 15-24), a
//   compare-and-delete, and returns its result as a bool (PhpRedisLock.php
//   26-34): owner-checked, false a definite no.
// - block($seconds) (Lock.php 112-133) retries acquire() until
//   currentTime() - $seconds >= $starting, currentTime() being Carbon's
//   whole-second timestamp (InteractsWithTime::currentTime): it gives up
//   between $seconds - 1 and $seconds + a sleep after it started, and
//   throws LockTimeoutException (a definite no).
// No extend (Laravel 8's Lock has none), no validity, no fencing. The
// token the harness sees is the owner, the value SET writes.
require __DIR__ . '/../../clients/lockstorm_client.php';
require 'Illuminate/Cache/autoload.php';
require 'Illuminate/Redis/autoload.php';
error_reporting(E_ALL & ~E_DEPRECATED);

use Illuminate\Cache\PhpRedisLock;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Redis\Connections\PhpRedisConnection;

$version = preg_replace('/[+~-].*/', '', trim(shell_exec("dpkg-query -W -f='\${Version}' php-illuminate-cache") ?? ''));
$seconds = (int)ceil(lockstorm_opt('TTL', 10.0) - 1e-9);
$wait = (int)ceil(lockstorm_opt('WAIT_TIMEOUT', 10.0) - 1e-9);
$sleepMs = (int)round(1000 * lockstorm_opt('RETRY_DELAY', 0.25));

$conn = null;
if ($LOCKSTORM_NODES) {
    $connector = function () {
        $r = new Redis();
        try {
            return lockstorm_connect(0);
        } catch (RedisException $e) {
            return $r; // not connected: its first command fails, the next reconnects
        }
    };
    $conn = new PhpRedisConnection($connector(), $connector);
}
$held = []; // owner → Lock

$acquire = function ($key) use (&$conn, $seconds, $wait, $sleepMs, &$held) {
    $lock = (new PhpRedisLock($conn, $key, $seconds))->betweenBlockedAttemptsSleepFor($sleepMs);
    try {
        $lock->block($wait);
    } catch (LockTimeoutException $e) {
        throw new LockFail("not acquired in block($wait)");
    }
    $held[$lock->owner()] = $lock;
    return $lock->owner();
};

// The Lock is forgotten only once release() answered: after an exception
// (an unknown outcome) it stays, so a release asked again
// (workload.release_again) reaches Laravel with the object its user still
// holds, not this table's "no such lock".
$release = function ($key, $token) use (&$held) {
    $lock = $held[$token] ?? null;
    if (!$lock) throw new LockFail('no such lock');
    $released = $lock->release();
    unset($held[$token]);
    if (!$released) throw new LockFail('release returned false: not the owner');
};

$name = "laravel-lock@$version";
$summary = rawurlencode("Laravel $version Cache::lock on Redis (PhpRedisLock, block())");
lockstorm_serve("name=$name summary=$summary nodes=1 topology=single expiry=server whole_seconds=true release=owner-checked",
    $acquire, $release);
