"""Smoke test of a ZooKeeper-compatible server with kazoo.

Usage: python3 kazoo_smoke.py HOST:PORT [--check-version]

Every step asserts what Apache ZooKeeper 3.8 does and prints one "ok" line;
the first failed assertion exits non-zero with a traceback. The Go test
compat/smoke runs this against an in-process keeper server and compares the
"ok" lines with kazoo.golden.
"""

import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
)
from kazoo.security import make_digest_acl

ROOT = "/smoke-kazoo"
WAIT = 10  # seconds; a passing run never waits this long


def ok(step):
    print("ok", step, flush=True)


def connect(hosts):
    c = KazooClient(hosts=hosts, timeout=10)
    c.start(timeout=WAIT)
    return c


class Recorder:
    """Collects watch callbacks and lets the test wait for the n-th one."""

    def __init__(self):
        self.calls = []
        self.cond = threading.Condition()

    def add(self, item):
        with self.cond:
            self.calls.append(item)
            self.cond.notify_all()

    def wait_for(self, n):
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.calls) >= n, WAIT):
                raise AssertionError("only %d callbacks: %r" % (len(self.calls), self.calls))
            return list(self.calls)


def crud(c):
    c.ensure_path(ROOT + "/a/b")
    assert c.exists(ROOT + "/a/b") is not None
    assert c.create(ROOT + "/data", b"v1") == ROOT + "/data"
    data, st = c.get(ROOT + "/data")
    assert data == b"v1" and st.version == 0 and st.data_length == 2, (data, st)
    st = c.set(ROOT + "/data", b"v2", version=0)
    assert st.version == 1, st
    try:
        c.set(ROOT + "/data", b"v3", version=0)
        raise AssertionError("stale set succeeded")
    except BadVersionError:
        pass
    try:
        c.create(ROOT + "/data")
        raise AssertionError("duplicate create succeeded")
    except NodeExistsError:
        pass
    try:
        c.delete(ROOT + "/a")
        raise AssertionError("deleted a node with children")
    except NotEmptyError:
        pass
    assert c.exists(ROOT + "/nothere") is None
    try:
        c.get(ROOT + "/nothere")
        raise AssertionError("get of a missing node succeeded")
    except NoNodeError:
        pass
    ok("create get set exists and their errors")

    path, st = c.create(ROOT + "/with-stat", b"xyz", include_data=True)
    assert path == ROOT + "/with-stat" and st.data_length == 3 and st.czxid == st.mzxid, (path, st)
    ok("create2 returns the stat")

    assert sorted(c.get_children(ROOT)) == ["a", "data", "with-stat"], c.get_children(ROOT)
    children, st = c.get_children(ROOT, include_data=True)
    assert st.numChildren == 3, st
    ok("children")


def sequential_and_ephemeral(hosts, c):
    c.create(ROOT + "/seq")
    names = [c.create(ROOT + "/seq/n-", sequence=True) for _ in range(3)]
    assert names == [ROOT + "/seq/n-%010d" % i for i in range(3)], names
    ok("sequential")

    other = connect(hosts)
    path = other.create(ROOT + "/eph", b"e", ephemeral=True)
    _, st = c.get(path)
    assert st.ephemeralOwner == other.client_id[0], (st.ephemeralOwner, other.client_id)
    gone = threading.Event()
    c.exists(path, watch=lambda ev: gone.set() if ev.type == "DELETED" else None)
    other.stop()
    other.close()
    assert gone.wait(WAIT), "no DELETED event for the closed session's ephemeral"
    assert c.exists(path) is None
    ok("ephemeral removed when its session closes")


def transactions(c):
    t = c.transaction()
    t.create(ROOT + "/tx", b"t")
    t.check(ROOT + "/data", 1)
    t.set_data(ROOT + "/tx", b"t2")
    t.delete(ROOT + "/with-stat")
    results = t.commit()
    assert results[0] == ROOT + "/tx" and results[1] is True and results[3] is True, results
    assert results[2].version == 1, results
    ok("transaction commits")

    t = c.transaction()
    t.create(ROOT + "/tx2")
    t.check(ROOT + "/data", 99)
    t.delete(ROOT + "/tx")
    results = t.commit()
    assert isinstance(results[0], RolledBackError), results
    assert isinstance(results[1], BadVersionError), results
    assert isinstance(results[2], RuntimeInconsistency), results
    assert c.exists(ROOT + "/tx2") is None and c.exists(ROOT + "/tx") is not None
    ok("failed transaction rolls back")


def watchers(c):
    rec = Recorder()

    @c.DataWatch(ROOT + "/watched")
    def on_data(data, stat):
        rec.add((data, stat.version if stat else None))

    assert rec.wait_for(1) == [(None, None)]
    c.create(ROOT + "/watched", b"one")
    rec.wait_for(2)
    c.set(ROOT + "/watched", b"two")
    rec.wait_for(3)
    c.delete(ROOT + "/watched")
    calls = rec.wait_for(4)
    assert calls == [(None, None), (b"one", 0), (b"two", 1), (None, None)], calls
    ok("DataWatch")

    kids = Recorder()
    c.create(ROOT + "/parent")

    @c.ChildrenWatch(ROOT + "/parent")
    def on_children(children):
        kids.add(sorted(children))

    kids.wait_for(1)
    c.create(ROOT + "/parent/x")
    kids.wait_for(2)
    c.create(ROOT + "/parent/y")
    kids.wait_for(3)
    c.delete(ROOT + "/parent/x")
    calls = kids.wait_for(4)
    assert calls == [[], ["x"], ["x", "y"], ["y"]], calls
    ok("ChildrenWatch")


def recipes(hosts, c):
    other = connect(hosts)
    mine = c.Lock(ROOT + "/lock", "first")
    theirs = other.Lock(ROOT + "/lock", "second")
    assert mine.acquire(timeout=WAIT)
    assert not theirs.acquire(blocking=False)
    assert theirs.contenders() == ["first"], theirs.contenders()
    got = threading.Event()

    def wait_lock():
        if theirs.acquire(timeout=WAIT):
            got.set()

    waiter = threading.Thread(target=wait_lock)
    waiter.start()
    mine.release()
    waiter.join(WAIT)
    assert got.is_set(), "the second contender never got the lock"
    theirs.release()
    ok("lock recipe")

    leader = threading.Event()
    stop = threading.Event()
    election = c.Election(ROOT + "/election", "candidate-1")
    rival = other.Election(ROOT + "/election", "candidate-2")

    def lead():
        leader.set()
        stop.wait(WAIT)

    runner = threading.Thread(target=election.run, args=(lead,))
    runner.start()
    assert leader.wait(WAIT), "no leader elected"
    contenders = rival.contenders()
    assert contenders == ["candidate-1"], contenders
    stop.set()
    runner.join(WAIT)
    other.stop()
    other.close()
    ok("election recipe")


def acls(hosts, c):
    c.add_auth("digest", "user:pass")
    acl = make_digest_acl("user", "pass", all=True)
    assert acl.id.id == "user:smGaoVKd/cQkjm7b88GyorAUz20=", acl
    c.create(ROOT + "/secret", b"s", acl=[acl])
    got, st = c.get_acls(ROOT + "/secret")
    assert got == [acl] and st.aversion == 0, (got, st)
    other = connect(hosts)
    try:
        other.get(ROOT + "/secret")
        raise AssertionError("read a digest-protected node without auth")
    except NoAuthError:
        pass
    other.stop()
    other.close()
    st = c.set_acls(ROOT + "/secret", [make_digest_acl("user", "pass", read=True, admin=True)])
    assert st.aversion == 1, st
    ok("digest auth and ACLs")


def main():
    hosts = sys.argv[1]
    check_version = "--check-version" in sys.argv[2:]
    c = connect(hosts)
    try:
        if c.exists(ROOT):
            c.delete(ROOT, recursive=True)
        crud(c)
        sequential_and_ephemeral(hosts, c)
        transactions(c)
        watchers(c)
        recipes(hosts, c)
        acls(hosts, c)
        if check_version:
            version = c.server_version()
            assert version[:2] == (3, 8), version
            ok("server_version")
        c.delete(ROOT, recursive=True)
        assert c.exists(ROOT) is None
        ok("recursive delete")
    finally:
        c.stop()
        c.close()


if __name__ == "__main__":
    main()
