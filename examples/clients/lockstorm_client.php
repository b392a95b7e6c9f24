<?php
// The lockstorm client protocol for PHP locks (grammar: PROTOCOL.md). A lock
// file defines acquire($key) and release($key, $token) and calls
// lockstorm_serve(); this file does the talking.

class LockFail extends Exception {} // a definite no: nothing was taken

// What release returns when its library says nothing (a release that
// returns void whether or not it deleted): answered "unknown".
const LOCKSTORM_UNKNOWN = 'lockstorm-unknown';

$LOCKSTORM_NODES = array_values(array_filter(explode(',', getenv('LOCKSTORM_NODES') ?: '')));
$LOCKSTORM_POINTS = false;

// A lock option in seconds: the scenario's (ms in the environment) or the
// lock's own default when the scenario leaves it at 0.
function lockstorm_opt($name, $default) {
    $v = (int)(getenv('LOCKSTORM_' . $name . '_MS') ?: 0);
    return $v > 0 ? $v / 1000.0 : $default;
}

// A node's connection waits 1 s for a connect or a reply, or the
// scenario's node timeout or command timeout (its client_timeout, what
// the harness's own connections wait) when longer: a scenario run on a
// stretched timescale (whole_seconds) sends its options scaled, and its
// late replies come back scaled too, so a fixed 1 s would cut off a reply
// the schedule meant to arrive (Laravel's wall-clock-step: 600 ms late at
// a 500 ms TTL, 3.6 s at 3 s scaled, a read error at 1 s; grant-after-ttl:
// 700 ms late, 4.2 s scaled, with a client_timeout of 2 s, 12 s scaled).
function lockstorm_connect($i = 0) {
    global $LOCKSTORM_NODES;
    [$host, $port] = explode(':', $LOCKSTORM_NODES[$i]);
    $timeout = max(1.0, lockstorm_opt('NODE_TIMEOUT', 0), lockstorm_opt('COMMAND_TIMEOUT', 0));
    $r = new Redis();
    $r->connect($host, (int)$port, $timeout);
    $r->setOption(Redis::OPT_READ_TIMEOUT, $timeout);
    return $r;
}

function lockstorm_say($line) {
    fwrite(STDOUT, $line . "\n");
    fflush(STDOUT);
}

// A failpoint: when the harness asked for them, announce and wait.
function lockstorm_point($name) {
    global $LOCKSTORM_POINTS;
    if (!$LOCKSTORM_POINTS) return;
    lockstorm_say("point $name");
    $line = trim(fgets(STDIN));
    if ($line !== "go $name") {
        fwrite(STDERR, "lockstorm: want \"go $name\", got \"$line\"\n");
        exit(1);
    }
}

// lockstorm_why is an exception and its causes on one line ("A: msg <- B:
// msg"): a library that wraps every failure in one class (Symfony Lock's
// LockAcquiringException) keeps its cause in getPrevious().
function lockstorm_why(Throwable $e) {
    $parts = [];
    for (; $e; $e = $e->getPrevious()) {
        $parts[] = get_class($e) . ': ' . preg_replace('/\s+/', ' ', $e->getMessage());
    }
    return implode(' <- ', $parts);
}

// $acquire($key) returns the token, or [token, validity in ms] (0: none);
// $release($key, $token) returns, or LOCKSTORM_UNKNOWN; $extend, when given
// (the hello then says extend=true), ($key, $token, $ttlSeconds) returns
// nothing or the validity in ms. LockFail is a definite no; anything else
// thrown leaves the outcome unknown.
function lockstorm_serve($hello, $acquire, $release, $extend = null) {
    global $LOCKSTORM_POINTS;
    while (($line = fgets(STDIN)) !== false) {
        $f = preg_split('/\s+/', trim($line));
        try {
            switch ($f[0]) {
            case 'hello':
                $LOCKSTORM_POINTS = in_array('points=on', array_slice($f, 2), true);
                lockstorm_say("hello 1 $hello" . ($extend ? ' extend=true' : ''));
                break;
            case 'acquire':
                $r = $acquire($f[1]);
                [$token, $validity] = is_array($r) ? $r : [$r, 0];
                lockstorm_say('ok ' . $token . ($validity > 0 ? ' validity=' . (int)round($validity) : ''));
                break;
            case 'release':
                lockstorm_say($release($f[1], $f[2]) === LOCKSTORM_UNKNOWN ? 'unknown release returned nothing' : 'ok');
                break;
            case 'extend':
                if (!$extend) {
                    lockstorm_say('error extend not supported');
                    break;
                }
                $validity = $extend($f[1], $f[2], (int)$f[3] / 1000.0);
                lockstorm_say('ok' . ($validity > 0 ? ' validity=' . (int)round($validity) : ''));
                break;
            default:
                lockstorm_say("error unknown request {$f[0]}");
            }
        } catch (LockFail $e) {
            lockstorm_say('fail ' . preg_replace('/\s+/', ' ', $e->getMessage()));
        } catch (Throwable $e) { // a lost reply, a timeout: unknown
            lockstorm_say('error ' . lockstorm_why($e));
        }
    }
}
