# A GSSAPI SASL exchange over ZooKeeper's wire protocol, with pykerberos
# for the Kerberos side, that prints what the server answers at each step
# so that two servers can be compared. Usage: HOST PORT SCENARIO, where
# SCENARIO chooses the client's last steps:
#   auth        no security layer, no authorization id (the usual login)
#   authz       no security layer, authorization id "bob@EXAMPLE.COM"
#   privacy     asks for confidentiality, which the server did not offer
#   both        asks for no layer and confidentiality
#   short       a three-byte answer
#   nonempty    a non-empty token where the empty one belongs
import base64, socket, struct, sys

import kerberos

host, port, scenario = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((host, port), timeout=30)


def readn(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b


def send(b):
    s.sendall(struct.pack(">i", len(b)) + b)


def recv():
    return readn(struct.unpack(">i", readn(4))[0])


xid = 0


def request(op, body):
    global xid
    xid += 1
    try:
        send(struct.pack(">ii", xid, op) + body)
        r = recv()
    except (EOFError, OSError):
        return "closed", None
    err = struct.unpack(">i", r[12:16])[0]
    return err, r[16:]


def sasl(tok):
    err, body = request(102, struct.pack(">i", len(tok)) + tok)
    if body is None:
        return err, None
    n = struct.unpack(">i", body[:4])[0]
    return err, (body[4:4 + n] if n >= 0 else None)


def b64(b):
    return base64.b64encode(b).decode()


send(struct.pack(">iqiqi", 0, 0, 30000, 0, 16) + b"\0" * 16)
recv()
_, ctx = kerberos.authGSSClientInit("zookeeper@localhost",
                                   gssflags=kerberos.GSS_C_MUTUAL_FLAG | kerberos.GSS_C_SEQUENCE_FLAG)
kerberos.authGSSClientStep(ctx, "")
err, rep = sasl(base64.b64decode(kerberos.authGSSClientResponse(ctx)))
print("context", err, "token" if rep else rep)
kerberos.authGSSClientStep(ctx, b64(rep))
if scenario == "nonempty":
    err, tok = sasl(b"x")
    print("nonempty", err, tok)
    sys.exit(0)
err, offer = sasl(b"")
kerberos.authGSSClientUnwrap(ctx, b64(offer))
print("offer", err, base64.b64decode(kerberos.authGSSClientResponse(ctx)).hex())
answer = {
    "auth": b"\x01\x00\x00\x00",
    "authz": b"\x01\x00\x00\x00bob@EXAMPLE.COM",
    "privacy": b"\x04\x01\x00\x00",
    "both": b"\x05\x01\x00\x00",
    "short": b"\x01\x00\x00",
}[scenario]
kerberos.authGSSClientWrap(ctx, b64(answer))
err, fin = sasl(base64.b64decode(kerberos.authGSSClientResponse(ctx)))
print("answer", err, fin)
# The identity the exchange gave: a node created with the auth ACL holds
# it, and getACL shows it.
path = ("/who-" + scenario).encode()
acl = struct.pack(">iii", 1, 31, 4) + b"auth" + struct.pack(">i", 0)
err, _ = request(1, struct.pack(">i", len(path)) + path + struct.pack(">i", -1) + acl + struct.pack(">i", 0))
print("create", err)
err, body = request(6, struct.pack(">i", len(path)) + path + b"\0")
if body is not None and err == 0:
    n, perms, sl = struct.unpack(">iii", body[:12])
    scheme = body[12:12 + sl]
    (il,) = struct.unpack(">i", body[12 + sl:16 + sl])
    print("acl", n, perms, scheme.decode(), body[16 + sl:16 + sl + il].decode())
else:
    print("getACL", err)
