# One kazoo client of the security matrix (verify/compat/secmatrix): it
# connects as argv[1] (JSON) says, with or without TLS, a client
# certificate, SASL credentials and digest credentials (addauth digest),
# and prints one line:
#   session [create<path>=<result> ...] <path>=<result> ...
#                                the session is up; the setup client's
#                                creates, then each path read, up to the
#                                first SessionClosedRequireAuth (-124)
#   authfailed                   the SASL exchange failed (AUTH_FAILED)
#   nosession                    no session within the connection attempt
# A GSSAPI client's ticket comes from the credential cache KRB5CCNAME
# names.
import json
import logging
import os
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, KazooException, ZookeeperError
from kazoo.protocol.states import KeeperState
from kazoo.security import ACL, Id, Permissions


class SessionClosedRequireAuth(ZookeeperError):
    """-124, which kazoo does not know: enforced authentication refused a
    request, and the server closes the connection."""

    code = -124


# Unmapped, kazoo's reader fails and the request only times out.
EXCEPTIONS[SessionClosedRequireAuth.code] = SessionClosedRequireAuth

spec = json.loads(sys.argv[1])
logging.basicConfig(level=logging.CRITICAL)
kwargs = {
    "hosts": spec["hosts"],
    "timeout": 30,
    # Three attempts: a refused handshake is refused each time, while one
    # cut short on a loaded machine is not the answer. AUTH_FAILED stops
    # kazoo at once.
    "connection_retry": {"max_tries": 2, "delay": 0.2, "max_delay": 0.5},
    "command_retry": {"max_tries": 0},
}
if spec.get("tls"):
    kwargs.update(use_ssl=True, ca=spec["ca"], verify_certs=True)
    if spec.get("cert"):
        kwargs.update(certfile=spec["cert"], keyfile=spec["key"])
if spec.get("sasl"):
    kwargs["sasl_options"] = spec["sasl"]
if spec.get("digest"):
    # Sent as auth(100) once the session is up, before any other request.
    kwargs["auth_data"] = [("digest", spec["digest"])]
zk = KazooClient(**kwargs)
# Every session state the connection reports, in order: AUTH_FAILED is
# followed at once by CLOSED, so polling the current state could miss it.
seen = []
report = zk._session_callback


def record(state):
    seen.append(state)
    return report(state)


zk._session_callback = record
zk.start_async()
deadline = time.time() + spec["timeout"]
outcome = "nosession"
running = False
while time.time() < deadline:
    if KeeperState.AUTH_FAILED in seen:
        outcome = "authfailed"
        break
    # kazoo reports CONNECTED before its SASL exchange: the session counts
    # once the exchange has completed too.
    if zk.connected and (not spec.get("sasl") or (getattr(zk, "sasl_cli", None) is not None and zk.sasl_cli.complete)):
        outcome = "session"
        break
    # connection_stopped starts out set and is cleared only when kazoo's
    # connection thread begins its loop: it means the attempts are over
    # only once that thread has been seen running.
    stopped = zk._connection.connection_stopped.is_set()
    if not stopped:
        running = True
    elif running:
        break
    time.sleep(0.02)
if outcome == "nosession" and KeeperState.AUTH_FAILED in seen:
    outcome = "authfailed"  # reported between two looks at the state
words = [outcome]
if outcome == "session":
    # The setup client creates nodes readable only by one identity.
    for path, scheme, ident in spec.get("create", []):
        try:
            zk.create_async(path, b"x", acl=[ACL(Permissions.READ, Id(scheme, ident))]).get(timeout=min(spec["timeout"], 15))
            words.append("create" + path + "=ok")
        except (KazooException, zk.handler.timeout_exception) as e:
            words.append("create" + path + "=" + type(e).__name__)
    for path in spec["paths"]:
        try:
            zk.get_async(path).get(timeout=min(spec["timeout"], 15))
            words.append(path + "=ok")
        except (KazooException, zk.handler.timeout_exception) as e:
            words.append(path + "=" + type(e).__name__)
            if isinstance(e, SessionClosedRequireAuth):
                break  # the server closes the connection after it
        if not zk.connected:
            break
print(" ".join(words))
sys.stdout.flush()
# Not zk.stop(): a connection thread stuck in a refused exchange would
# hold it; the server sees the connection close as the process exits.
os._exit(0)
