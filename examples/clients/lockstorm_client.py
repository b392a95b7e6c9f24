"""The lockstorm client protocol for Python locks (grammar: lockimpl/exec
package doc and PROTOCOL.md). A lock file defines acquire(key) and
release(key, token) and calls serve(); this module does the talking."""
import os
import sys
import threading

try:
    import redis
except ImportError:
    # Debian's python3-redis lives in /usr/lib/python3/dist-packages, where a
    # python3 from pyenv or a venv does not look.
    sys.path.append('/usr/lib/python3/dist-packages')
    import redis

NODES = [a for a in os.environ.get('LOCKSTORM_NODES', '').split(',') if a]
CLIENT = int(os.environ.get('LOCKSTORM_CLIENT', '0'))
SEED = int(os.environ.get('LOCKSTORM_SEED', '1'))
_points = False


def opt_ms(name, default_s):
    """A lock option in seconds: the scenario's (ms in the environment) or
    the lock's own default when the scenario leaves it at 0."""
    v = int(os.environ.get('LOCKSTORM_' + name + '_MS', '0') or 0)
    return v / 1000.0 if v > 0 else default_s


def connect(i=0, blocking=False):
    """A connection to node i. Its socket timeout (1 s) is how a lock learns
    a reply was lost; a lock that blocks on the server (BLPOP, BRPOPLPUSH,
    WAIT) for up to the wait timeout passes blocking=True, or every wait
    longer than a second fails as a lost reply: the socket then waits the
    wait timeout (or the node timeout, when the scenario sets one) and 1 s
    more."""
    host, port = NODES[i].rsplit(':', 1)
    timeout = 1.0
    if blocking:
        timeout = max(opt_ms('NODE_TIMEOUT', 0), opt_ms('WAIT_TIMEOUT', 10.0)) + 1.0
    return redis.Redis(host=host, port=int(port), socket_timeout=timeout, socket_connect_timeout=1.0)


_out = threading.Lock()


def _say(line):
    with _out:  # lost() may speak from a library's own thread
        sys.stdout.write(line + '\n')
        sys.stdout.flush()


# UNKNOWN is what release returns when its library says nothing (a release
# that returns None whether or not it deleted): answered "unknown".
UNKNOWN = object()


def lost(token):
    """The library's own lost-lock signal (a failed refresh): tell the
    harness, any time; hello must say lost=true."""
    _say('lost ' + token)


def point(name):
    """A failpoint: when the harness asked for them, announce and wait."""
    if not _points:
        return
    _say('point ' + name)
    line = sys.stdin.readline()
    if line.split() != ['go', name]:
        sys.exit('lockstorm: want "go %s", got %r' % (name, line))


class Fail(Exception):
    """A definite no: every reply was received; nothing was taken."""


def serve(hello, acquire, release, extend=None):
    """hello: the fields of the hello reply; acquire(key) returns the token
    (or (token, fence)) or raises Fail; release(key, token) returns or
    raises Fail; extend(key, token, ttl_seconds), when given, returns or
    raises Fail (and hello says extend=true). Any other exception leaves the
    outcome unknown."""
    global _points
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == 'hello':
                _points = 'points=on' in f[2:]
                _say('hello 1 ' + hello + (' extend=true' if extend else ''))
            elif f[0] == 'acquire':
                r = acquire(f[1])
                token, fence = r if isinstance(r, tuple) else (r, None)
                _say('ok %s%s' % (token, '' if fence is None else ' fence=%d' % fence))
            elif f[0] == 'release':
                _say('unknown' if release(f[1], f[2]) is UNKNOWN else 'ok')
            elif f[0] == 'extend' and extend:
                extend(f[1], f[2], int(f[3]) / 1000.0)
                _say('ok')
            else:
                _say('error unknown request ' + f[0])
        except Fail as e:
            _say('fail ' + ' '.join(str(e).split()))
        except Exception as e:  # a lost reply, a timeout: unknown
            _say('error %s: %s' % (type(e).__name__, ' '.join(str(e).split())))
