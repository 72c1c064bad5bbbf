#!/usr/bin/python3
"""kazoo's writer for the rolling migration test: one kazoo client, given
every member's address, creates PREFIX-<n> one after another until SIGTERM
or stdin closes, and prints "acked PATH" for each create the ensemble
acknowledged and "unknown PATH" for each whose outcome it could not learn.

    kazoo_writer.py SERVERS PREFIX
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
servers, prefix = sys.argv[1], sys.argv[2]
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()

zk = KazooClient(hosts=servers, timeout=15.0)
zk.start(timeout=60)
zk.ensure_path(prefix.rsplit("/", 1)[0])
print("started", flush=True)
n = 0
while not stop.is_set():
    path = "%s-%06d" % (prefix, n)
    n += 1
    try:
        zk.create(path, path.encode())
        print("acked", path, flush=True)
    except NodeExistsError:
        # Nobody else creates these paths: the test fails on this line.
        print("exists", path, flush=True)
    except (KazooException, KazooTimeoutError):
        print("unknown", path, flush=True)
        time.sleep(0.02)
    stop.wait(0.02)
zk.stop()
print("stopped", flush=True)
