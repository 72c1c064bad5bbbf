#!/usr/bin/python3
"""kazoo's side of bench/failover.sh: WRITERS kazoo clients, each given
every address, set their own znode back to back until SIGTERM; each
acknowledged write appends "issuedNs ackedNs" (Unix ns) to OUT.

    failover_kazoo.py SERVERS OUT [WRITERS]

kazoo reconnects by itself: after a full round of members that refused
it, it waits 100 ms, doubling (with jitter) up to a minute.
"""
import logging
import signal
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError

logging.basicConfig(level=logging.CRITICAL)
servers, out = sys.argv[1], sys.argv[2]
writers = int(sys.argv[3]) if len(sys.argv) > 3 else 4
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
lock = threading.Lock()
f = open(out, "w", buffering=1)


def writer(i):
    zk = KazooClient(hosts=servers, timeout=10.0)
    zk.start(timeout=30)
    path = "/failover-kazoo/w%d" % i
    zk.ensure_path(path)
    while not stop.is_set():
        issued = time.time_ns()
        try:
            zk.set(path, str(issued).encode())
        except (KazooException, KazooTimeoutError):
            time.sleep(0.001)
            continue
        acked = time.time_ns()
        with lock:
            f.write("%d %d\n" % (issued, acked))
    zk.stop()


threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(writers)]
for t in threads:
    t.start()
while not stop.is_set():
    stop.wait(0.2)
for t in threads:
    t.join(timeout=5)
f.close()
