<?php
// Symfony Lock (Debian's php-symfony-lock) as a lockstorm client process:
//   php symfony_lock.php            RedisStore on one node
//   php symfony_lock.php NODES      CombinedStore over NODES RedisStores
//                                   with ConsensusStrategy (a Redlock)
// Called as its documentation ("Lock Component"; the docblocks of
// Lock.php and LockFactory.php) shows: $factory = new LockFactory($store),
// $lock = $factory->createLock($resource, $ttl, false) per acquire (a Lock
// is one Key: one random token), $lock->acquire(), $lock->refresh($ttl),
// $lock->release(); a php-redis \Redis per node. Options are the library's
// defaults (the TTL 300 s) but the scenario's ttl, for the store's
// initialTtl and the lock's ttl alike. Waiting: acquire(true) loops without
// end (Lock.php 83-90: save, on conflict usleep 100 +- 10 ms, a delay no
// option changes), so the client runs that same loop on acquire(false) and
// gives up after the scenario's wait_timeout (10 s unset): a definite no.
//
// Claims, from the docs and the lines they rest on (5.4.23):
// - The key is the resource name verbatim, a sorted set: the token (base64
//   of 32 random bytes, getUniqueToken) and "__write__" scored now+ttl, now
//   from the server's TIME (getNowCode, Redis >= 5), the key PEXPIREAT the
//   greatest score (RedisStore::save, RedisStore.php 60-103): expiry on
//   the server. The observers see its events (zadd, pexpireat, del) but
//   read no owner from a sorted set.
// - "the lock will be automatically released after ttl seconds", and
//   getRemainingLifetime()/isExpired() tell a holder how long it has: the
//   Key's expiry is microtime(true) + ttl taken *before* each script is
//   sent (reduceLifetime: save 97, putOffExpiration 183, after
//   resetLifetime in Lock::acquire 79 and Lock::refresh 204). acquire is
//   save then refresh($ttl) (101-103); the client reports the remaining
//   lifetime as the validity, on acquire and extend.
// - An extended lease is dated from before the extend's script, and a yes
//   that came back past it is refused: Lock::refresh resets the Key's
//   lifetime (204), RedisStore::putOffExpiration reduces it to now + ttl
//   before the script is sent (183-184) and checks it after the reply
//   (188, checkNotExpired), and refresh releases and throws
//   LockExpiredException when it has run out (208-215); CombinedStore's
//   putOffExpiration takes one deadline before the first store (140),
//   gives each store what is left of it (144-150) and checks the Key
//   after (162): extend_checked=true.
// - A grant that came back late is given back: RedisStore::save checks the
//   Key after its script (102, ExpiringStoreTrait::checkNotExpired: delete,
//   LockExpiredException), and Lock::acquire after save and refresh
//   (105-112: release, LockExpiredException): grant_checked=true. And the
//   server confirms it: acquire is save then refresh (101-103), whose
//   putOffExpiration throws LockConflictedException once the token is gone
//   (RedisStore.php 184-185), so a save whose key expired while its reply
//   was late is refused whatever the clock says: grant_confirmed=true.
//   acquire's catch-all (124-127) wraps that exception in a LockAcquiringException,
//   as it does a lost reply, and the release inside swallows its own
//   failure (108): the client answers error (unknown), as for any
//   exception but a conflict.
// - release deletes only its own token (delete, RedisStore.php 194-222:
//   ZSCORE, then ZREM) and returns nothing, whether or not it was there
//   (Lock::release 239-257: delete, then exists() must say no):
//   release=owner-checked, answered "unknown" (neither a yes nor a no).
// - refresh (putOffExpiration, RedisStore.php 151-189) puts the expiry off
//   only while the token is in the set, else LockConflictedException,
//   which Lock::refresh rethrows (218-221): a definite no; a refresh that
//   took longer than the TTL is given back (208-215), an error as above.
// - CombinedStore (Store/CombinedStore.php 60-92) saves on each store in
//   turn until ConsensusStrategy can no longer be met, grants on more than
//   half (ConsensusStrategy::isMet) when the Key has not expired
//   (checkNotExpired: the first store's start + ttl), and deletes on every
//   store otherwise; putOffExpiration (135-177) gives each store the TTL
//   left of one deadline taken at its start: topology=quorum.
// No fencing; not reentrant (each acquire is a new Lock, a new token).
require __DIR__ . '/../../clients/lockstorm_client.php';
require 'Symfony/Component/Lock/autoload.php';
error_reporting(E_ALL & ~E_DEPRECATED);

use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

$n = (int)($argv[1] ?? 1);
$version = preg_replace('/[+~-].*/', '', trim(shell_exec("dpkg-query -W -f='\${Version}' php-symfony-lock") ?? ''));
$ttl = lockstorm_opt('TTL', 300.0);
$wait = lockstorm_opt('WAIT_TIMEOUT', 10.0);

// node is php-redis on node $i (1 s timeouts, like every client here); a
// node down when the process starts is connected to on its first command
// (php-redis reconnects a lost connection on the next command).
function node($i) {
    try {
        return lockstorm_connect($i);
    } catch (RedisException $e) {
        [$host, $port] = explode(':', $GLOBALS['LOCKSTORM_NODES'][$i]);
        $r = new Redis();
        try { $r->connect($host, (int)$port, 1.0); } catch (RedisException $e) {}
        return $r;
    }
}

$factory = null;
if ($LOCKSTORM_NODES) {
    $stores = [];
    for ($i = 0; $i < $n; $i++) {
        $stores[] = new RedisStore(node($i), $ttl);
    }
    $store = $n > 1 ? new CombinedStore($stores, new ConsensusStrategy()) : $stores[0];
    $factory = new LockFactory($store);
}
$held = []; // token → Lock
$next = 0;

$acquire = function ($key) use ($factory, $ttl, $wait, &$held, &$next) {
    $lock = $factory->createLock($key, $ttl, false);
    $giveUp = microtime(true) + $wait;
    while (!$lock->acquire(false)) {
        if (microtime(true) + 0.1 > $giveUp) {
            throw new LockFail(sprintf('not acquired in %.3f s', $wait));
        }
        usleep((100 + random_int(-10, 10)) * 1000);
    }
    $token = getmypid() . '-' . (++$next);
    $held[$token] = $lock;
    return [$token, 1000 * $lock->getRemainingLifetime()];
};

// The Lock is forgotten only once release() returned: after an exception
// (an unknown outcome) it stays, so a release asked again reaches Symfony
// with the object its user still holds.
$release = function ($key, $token) use (&$held) {
    $lock = $held[$token] ?? null;
    if (!$lock) throw new LockFail('no such lock');
    $lock->release();
    unset($held[$token]);
    return LOCKSTORM_UNKNOWN;
};

$extend = function ($key, $token, $ttl) use (&$held) {
    $lock = $held[$token] ?? null;
    if (!$lock) throw new LockFail('no such lock');
    try {
        $lock->refresh($ttl);
    } catch (LockConflictedException $e) {
        throw new LockFail(get_class($e) . ': ' . $e->getMessage());
    }
    return 1000 * $lock->getRemainingLifetime();
};

$name = 'symfony-lock' . ($n > 1 ? "-$n" : '') . "@$version";
$summary = rawurlencode("Symfony Lock $version " . ($n > 1 ? "CombinedStore over $n RedisStores, ConsensusStrategy" : 'RedisStore') . ' (php-redis)');
lockstorm_serve("name=$name summary=$summary nodes=$n topology=" . ($n > 1 ? 'quorum' : 'single') .
    ' expiry=server release=owner-checked grant_checked=true grant_confirmed=true extend_checked=true', $acquire, $release, $extend);
