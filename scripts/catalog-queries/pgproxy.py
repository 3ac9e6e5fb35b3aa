#!/usr/bin/env python3
"""A recording proxy for the PostgreSQL wire protocol (3.0): listens on a port, relays
every connection to a server unchanged, and writes each message the clients send (the
startup packet's parameters, Query, Parse with its parameter type OIDs, Bind with its
parameter formats and values and result formats, Execute, Describe, Close, Sync) and how
the server ended each command (CommandComplete with its tag and row count, ErrorResponse,
ReadyForQuery) as one JSON line. The server's log (log_statement = 'all') has the statements' text but not the
types the client declared for their parameters nor the formats it asked for; those are
what a faithful replay needs, so capture.sh runs the clients through this.

It never changes a byte in either direction. A client that asks for TLS is told no by the
server (the capture's PostgreSQL has no certificate) and goes on in the clear; the proxy
parses the stream only to record it.

Usage: pgproxy.py LISTEN_PORT SERVER_PORT OUT.jsonl   (both on 127.0.0.1; runs until killed)
"""

import json
import socket
import struct
import sys
import threading
import time

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
PROTOCOL_3 = 196608

lock = threading.Lock()
sequence = 0
out = None


def record(conn_id, kind, **fields):
    global sequence
    with lock:
        sequence += 1
        fields.update(seq=sequence, conn=conn_id, kind=kind, time=time.time())
        out.write(json.dumps(fields) + "\n")
        out.flush()


def read_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def cstring(body, at):
    end = body.index(b"\0", at)
    return body[at:end].decode("utf-8", "replace"), end + 1


def value_out(raw, fmt):
    """A parameter value for the log: text as text, binary as hex."""
    if raw is None:
        return None
    if fmt == 0:
        try:
            return {"text": raw.decode("utf-8")}
        except UnicodeDecodeError:
            return {"hex": raw.hex()}
    return {"hex": raw.hex()}


def parse_frontend(conn_id, kind, body):
    if kind == b"Q":
        sql, _ = cstring(body, 0)
        record(conn_id, "Query", sql=sql)
    elif kind == b"P":
        name, at = cstring(body, 0)
        sql, at = cstring(body, at)
        (n,) = struct.unpack_from("!h", body, at)
        oids = list(struct.unpack_from(f"!{n}I", body, at + 2))
        record(conn_id, "Parse", statement=name, sql=sql, param_types=oids)
    elif kind == b"B":
        portal, at = cstring(body, 0)
        name, at = cstring(body, at)
        (nf,) = struct.unpack_from("!h", body, at)
        formats = list(struct.unpack_from(f"!{nf}h", body, at + 2))
        at += 2 + 2 * nf
        (np,) = struct.unpack_from("!h", body, at)
        at += 2
        values = []
        for i in range(np):
            (length,) = struct.unpack_from("!i", body, at)
            at += 4
            raw = None if length < 0 else body[at : at + length]
            at += max(length, 0)
            fmt = formats[0] if nf == 1 else (formats[i] if nf > 1 else 0)
            values.append(value_out(raw, fmt))
        (nr,) = struct.unpack_from("!h", body, at)
        result_formats = list(struct.unpack_from(f"!{nr}h", body, at + 2))
        record(
            conn_id,
            "Bind",
            portal=portal,
            statement=name,
            param_formats=formats,
            params=values,
            result_formats=result_formats,
        )
    elif kind == b"E":
        portal, at = cstring(body, 0)
        (max_rows,) = struct.unpack_from("!i", body, at)
        record(conn_id, "Execute", portal=portal, max_rows=max_rows)
    elif kind == b"D":
        name, _ = cstring(body, 1)
        record(conn_id, "Describe", what=chr(body[0]), name=name)
    elif kind == b"C":
        name, _ = cstring(body, 1)
        record(conn_id, "Close", what=chr(body[0]), name=name)
    elif kind == b"S":
        record(conn_id, "Sync")
    elif kind == b"X":
        record(conn_id, "Terminate")
    elif kind in (b"d", b"c", b"f"):
        record(conn_id, {b"d": "CopyData", b"c": "CopyDone", b"f": "CopyFail"}[kind], length=len(body))
    # Anything else (passwords, flush, function calls) is relayed without a record.


def client_to_server(conn_id, client, server, state):
    try:
        # Untyped messages first: SSL or GSS requests (answered with one byte by the
        # server), then the startup packet or a cancel request.
        while True:
            head = read_exact(client, 8)
            length, code = struct.unpack("!ii", head)
            body = read_exact(client, length - 8)
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                with state["lock"]:
                    state["single_bytes"] += 1
            server.sendall(head + body)
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                continue
            if code == CANCEL_REQUEST:
                record(conn_id, "CancelRequest")
                return
            assert code == PROTOCOL_3, f"protocol {code}"
            params = body.split(b"\0")
            startup = {params[i].decode(): params[i + 1].decode() for i in range(0, len(params) - 1, 2) if params[i]}
            record(conn_id, "Startup", parameters=startup)
            break
        while True:
            kind = read_exact(client, 1)
            (length,) = struct.unpack("!i", read_exact(client, 4))
            body = read_exact(client, length - 4)
            # Recorded before it is relayed, so that the server's answer is always
            # recorded after it.
            parse_frontend(conn_id, kind, body)
            server.sendall(kind + struct.pack("!i", length) + body)
    except (EOFError, OSError):
        pass
    finally:
        for s in (client, server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def server_to_client(conn_id, server, client, state):
    """Relays the server's bytes and records, per command, how it ended: CommandComplete
    (its tag and the DataRows before it), ErrorResponse (SQLSTATE and message),
    EmptyQueryResponse, PortalSuspended, and ReadyForQuery."""
    rows = 0
    try:
        while True:
            kind = read_exact(server, 1)
            # The answer to an SSL or GSS request is one byte ('N' here): the request was
            # counted before it was relayed, so the count is there when its answer is.
            with state["lock"]:
                single = state["single_bytes"] > 0
                if single:
                    state["single_bytes"] -= 1
            if single:
                client.sendall(kind)
                continue
            raw_length = read_exact(server, 4)
            (length,) = struct.unpack("!i", raw_length)
            body = read_exact(server, length - 4)
            if kind == b"D":
                rows += 1
            elif kind == b"C":
                tag, _ = cstring(body, 0)
                record(conn_id, "CommandComplete", tag=tag, rows=rows)
                rows = 0
            elif kind == b"E":
                fields = {}
                at = 0
                while body[at] != 0:
                    value, nxt = cstring(body, at + 1)
                    fields[chr(body[at])] = value
                    at = nxt
                record(conn_id, "ErrorResponse", sqlstate=fields.get("C"), message=fields.get("M"))
                rows = 0
            elif kind == b"I":
                record(conn_id, "EmptyQueryResponse")
            elif kind == b"s":
                record(conn_id, "PortalSuspended", rows=rows)
                rows = 0
            elif kind == b"Z":
                record(conn_id, "ReadyForQuery", status=chr(body[0]))
            client.sendall(kind + raw_length + body)
    except (EOFError, OSError):
        pass
    finally:
        try:
            client.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    global out
    listen_port, server_port, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    out = open(path, "a", encoding="utf-8")
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", listen_port))
    listener.listen(64)
    conn_id = 0
    while True:
        client, _ = listener.accept()
        conn_id += 1
        server = socket.create_connection(("127.0.0.1", server_port))
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        state = {"lock": threading.Lock(), "single_bytes": 0}
        threading.Thread(target=client_to_server, args=(conn_id, client, server, state), daemon=True).start()
        threading.Thread(target=server_to_client, args=(conn_id, server, client, state), daemon=True).start()


if __name__ == "__main__":
    main()
