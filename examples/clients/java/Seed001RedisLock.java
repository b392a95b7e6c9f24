import java.util.HashMap;
import java.util.Map;

/**
 * Seed 001 (锁, MissionLee; the code by zhengcanrui,
 * seeds/001_02106470133db1ed.txt, §五 代码实现, explained in §四):
 * its Java RedisLock as the document writes it, bugs included, with Spring's
 * RedisTemplate replaced by {@link Resp} (no Java Redis library is installed
 * here) and the lockstorm protocol around it ({@link LockstormClient}):
 * <ul>
 *   <li>the Redis key is lockKey + "_lock" (the constructor appends it): the
 *       hello declares redis_key={key}_lock so the servers' observers watch it;
 *   <li>SETNX key (now + expireMsecs + 1), System.currentTimeMillis() in
 *       milliseconds; the key never expires on the server;
 *   <li>if held: GET; if the stamp is below now, GETSET the new stamp and win
 *       when the old value equals what GET read. The loser's GETSET has still
 *       overwritten the winner's stamp ("不过这一点非常微小的误差带来的影响可以忽略不计");
 *   <li>the helpers get/setNX/getSet swallow every Redis exception (logged) and
 *       return null/false/null: a SETNX whose reply was lost may have taken the
 *       key while lock() goes on as if it had not;
 *   <li>the wait budget timeoutMsecs (10 s) is decreased by 100 ms
 *       (DEFAULT_ACQUIRY_RESOLUTION_MILLIS) per attempt, whatever the attempt
 *       took, with a 100 ms sleep between attempts; lock() then returns false;
 *   <li>unlock() DELs the key whenever this instance thinks it is locked: the
 *       check before DEL that §四 recommends is marked "这里没有做" (not done),
 *       and unlock() returns nothing, so the release is answered unknown.
 * </ul>
 * Options: LOCKSTORM_TTL_MS (expireMsecs, 60 s), LOCKSTORM_WAIT_TIMEOUT_MS
 * (timeoutMsecs, 10 s), LOCKSTORM_RETRY_DELAY_MS (the resolution, 100 ms: a
 * constant in the document, an option here as in the Go port getset). The
 * failpoints reuse the Go port's names (getset/...) so the same schedules drive
 * both. Claims, as §四–§五 state them: one Redis (topology=single), the expiry
 * stamp compared on the clients' clocks (expiry=client-clock), an
 * unconditional DEL (release=unconditional), and one winner of a take-over
 * ("只有一个线程才能获取上一个线上的设置时间": racy_takeover=false).
 */
public final class Seed001RedisLock {
    private Seed001RedisLock() {}

    /** The document's class, its RedisTemplate swapped for a Resp connection. */
    static final class RedisLock {
        private static final int DEFAULT_ACQUIRY_RESOLUTION_MILLIS =
                (int) LockstormClient.optMs("RETRY_DELAY", 100);

        private final Resp redisTemplate;

        /** Lock key path. */
        private final String lockKey;

        /** 锁超时时间，防止线程在入锁以后，无限的执行等待 */
        private int expireMsecs = 60 * 1000;

        /** 锁等待时间，防止线程饥饿 */
        private int timeoutMsecs = 10 * 1000;

        private volatile boolean locked = false;

        /** The value this lock wrote when it won: the token the harness is told. */
        private String expiresWritten;

        RedisLock(Resp redisTemplate, String lockKey) {
            this.redisTemplate = redisTemplate;
            this.lockKey = lockKey + "_lock";
        }

        RedisLock(Resp redisTemplate, String lockKey, int timeoutMsecs) {
            this(redisTemplate, lockKey);
            this.timeoutMsecs = timeoutMsecs;
        }

        RedisLock(Resp redisTemplate, String lockKey, int timeoutMsecs, int expireMsecs) {
            this(redisTemplate, lockKey, timeoutMsecs);
            this.expireMsecs = expireMsecs;
        }

        private String get(final String key) {
            Object obj = null;
            try {
                obj = redisTemplate.call("GET", key);
            } catch (Exception e) {
                System.err.println("get redis error, key : " + key + ": " + e);
            }
            return obj != null ? obj.toString() : null;
        }

        private boolean setNX(final String key, final String value) {
            Object obj = null;
            try {
                obj = Long.valueOf(1).equals(redisTemplate.call("SETNX", key, value));
            } catch (Exception e) {
                System.err.println("setNX redis error, key : " + key + ": " + e);
            }
            return obj != null ? (Boolean) obj : false;
        }

        private String getSet(final String key, final String value) {
            Object obj = null;
            try {
                obj = redisTemplate.call("GETSET", key, value);
            } catch (Exception e) {
                System.err.println("setNX redis error, key : " + key + ": " + e);
            }
            return obj != null ? (String) obj : null;
        }

        /**
         * 获得 lock: SETNX the expiry stamp; if held and the stamp has passed,
         * GETSET a new one and win if the old value is the one read.
         */
        synchronized boolean lock() throws Exception {
            int timeout = timeoutMsecs;
            while (timeout >= 0) {
                LockstormClient.point("getset/before-setnx");
                long expires = System.currentTimeMillis() + expireMsecs + 1;
                String expiresStr = String.valueOf(expires); //锁到期时间
                boolean set = this.setNX(lockKey, expiresStr);
                LockstormClient.point("getset/after-setnx");
                if (set) {
                    // lock acquired
                    locked = true;
                    expiresWritten = expiresStr;
                    return true;
                }

                String currentValueStr = this.get(lockKey); //redis里的时间
                LockstormClient.point("getset/after-get");
                if (currentValueStr != null && Long.parseLong(currentValueStr) < System.currentTimeMillis()) {
                    // lock is expired
                    LockstormClient.point("getset/before-getset");
                    String oldValueStr = this.getSet(lockKey, expiresStr);
                    LockstormClient.point("getset/after-getset");
                    if (oldValueStr != null && oldValueStr.equals(currentValueStr)) {
                        // lock acquired
                        locked = true;
                        expiresWritten = expiresStr;
                        return true;
                    }
                }
                timeout -= DEFAULT_ACQUIRY_RESOLUTION_MILLIS;
                Thread.sleep(DEFAULT_ACQUIRY_RESOLUTION_MILLIS);
            }
            return false;
        }

        /** Acqurired lock release. */
        synchronized void unlock() throws Exception {
            LockstormClient.point("getset/before-release");
            if (locked) {
                redisTemplate.call("DEL", lockKey);
                locked = false;
            }
        }
    }

    /** One RedisLock per key, as the document's caller builds one per key. */
    private static final Map<String, RedisLock> LOCKS = new HashMap<>();

    private static Resp redis;
    private static int timeout;
    private static int expire;

    private static RedisLock lockFor(String key) {
        RedisLock lock = LOCKS.get(key);
        if (lock == null) {
            lock = new RedisLock(redis, key, timeout, expire);
            LOCKS.put(key, lock);
        }
        return lock;
    }

    /**
     * Serves the harness: acquire is lock() (false is a definite fail: its
     * wait budget ran out), release is unlock() (unknown: it returns nothing).
     */
    public static void main(String[] args) throws Exception {
        redis = LockstormClient.NODES.isEmpty() ? null : LockstormClient.connect(0);
        timeout = (int) LockstormClient.optMs("WAIT_TIMEOUT", 10 * 1000);
        expire = (int) LockstormClient.optMs("TTL", 60 * 1000);
        LockstormClient.serve("name=java-seed001 summary=seed%20001%27s%20Java%20RedisLock%20(SETNX/GETSET,%20ms) "
                + "points=getset/before-setnx,getset/after-setnx,getset/after-get,getset/before-getset,"
                + "getset/after-getset,getset/before-release redis_key=%7Bkey%7D_lock "
                + "topology=single expiry=client-clock release=unconditional racy_takeover=false",
                new LockstormClient.Lock() {
                    @Override
                    public String acquire(String key) throws Exception {
                        RedisLock lock = lockFor(key);
                        try {
                            if (!lock.lock()) {
                                throw new LockstormClient.Fail("lock() returned false: wait budget of " + timeout + " ms spent");
                            }
                        } catch (NumberFormatException e) {
                            throw new LockstormClient.Fail("Long.parseLong threw " + e.getMessage());
                        }
                        return lock.expiresWritten;
                    }

                    @Override
                    public LockstormClient.Released release(String key, String token) throws Exception {
                        lockFor(key).unlock();
                        return LockstormClient.Released.UNKNOWN;
                    }
                });
    }
}
