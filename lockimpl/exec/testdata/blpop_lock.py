"""A test's lock that blocks on the server: acquire waits on BLPOP for a
grant pushed to q:KEY (up to the wait timeout). LOCKSTORM_TEST_BLOCKING=1
connects with blocking=True, as such a lock must."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'examples', 'clients'))
import lockstorm_client as ls  # noqa: E402

r = ls.connect(blocking=os.environ.get('LOCKSTORM_TEST_BLOCKING') == '1') if ls.NODES else None
WAIT = ls.opt_ms('WAIT_TIMEOUT', 10.0)


def acquire(key):
    got = r.blpop(['q:' + key], timeout=WAIT)
    if got is None:
        raise ls.Fail('no grant within the wait timeout')
    return got[1].decode()


def release(key, token):
    pass


ls.serve('name=blpop-test topology=single expiry=none release=unconditional', acquire, release)
