#!/usr/bin/python3
"""`kiln rpc-server` against good and bad clients (docs/rpc.md).

  rpc_server_test.py --kiln KILN --kilnc KILNC --runtime-tests KILN_RUNTIME_TESTS
                     --source-root DIR --workdir DIR

A server on loopback (port 0, short time-outs, a 1 MiB message limit) must
measure good bundles -- the demo model through `kiln bench --rpc` (the C++
client) and the unit tests' add/scale bundle through the raw protocol written
out here -- and, for every bad input, answer with the right error and stay up:
a candidate that crashes (SIGSEGV) or never returns (killed at its time
limit, no process left behind), a bundle the runtime refuses, truncated,
stalled, oversized and malformed messages, bad fields, a wrong token, a
silent client. After each, a fresh connection must still measure the good
bundle. The crashing and hanging bundles come from the runtime unit tests
(KILN_TEST_WRITE_RPC_BUNDLES), whose kernel library has those kernels.
Prints PASS/FAIL per check and "N passed, N failed"; exit 1 on any failure.
"""

import argparse
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

MAGIC, VERSION = 0x4350524B, 1
HELLO, HELLO_REPLY, RUN, RUN_REPLY, ERROR = 1, 2, 3, 4, 5
E_BAD, E_AUTH, E_LARGE, E_LOAD, E_RUN, E_CRASH, E_TIMEOUT = 1, 2, 3, 4, 5, 6, 7


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=''):
        print('%s: %s%s' % ('PASS' if ok else 'FAIL', what, '' if ok or not detail else ' -- ' + str(detail)))
        sys.stdout.flush()
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


# --- the protocol, written out independently of tools/rpc ---------------------

def header(mtype, size, magic=MAGIC, version=VERSION):
    return struct.pack('<IHHI', magic, version, mtype, size)


def blob(data):
    return struct.pack('<I', len(data)) + data


def hello(token=b''):
    return struct.pack('<I', VERSION) + blob(token)


def run_payload(bundle, warmup=1, repeats=3, number=2, threads=1, device=1, timeout_ms=20000, flags=0):
    return struct.pack('<8I', warmup, repeats, number, threads, device, 0, timeout_ms, flags) + blob(bundle)


def recv_exact(sock, n):
    data = b''
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def recv_message(sock):
    """(type, payload), or None when the server closed the connection."""
    head = recv_exact(sock, 12)
    if head is None:
        return None
    magic, version, mtype, size = struct.unpack('<IHHI', head)
    assert magic == MAGIC and version == VERSION, head
    payload = recv_exact(sock, size)
    assert payload is not None, 'the server closed inside a payload'
    return mtype, payload


def parse_error(payload):
    code, length = struct.unpack_from('<II', payload)
    return code, payload[8:8 + length].decode(errors='replace')


def parse_run_reply(payload, with_dispatches=False):
    length, = struct.unpack_from('<I', payload)
    device = payload[4:4 + length].decode()
    at = 4 + length
    count, = struct.unpack_from('<I', payload, at)
    times = struct.unpack_from('<%dQ' % count, payload, at + 4)
    at += 4 + 8 * count
    dispatches, = struct.unpack_from('<I', payload, at)
    per_dispatch = struct.unpack_from('<%dQ' % (count * dispatches), payload, at + 4)
    assert at + 4 + 8 * count * dispatches == len(payload)
    if with_dispatches:
        return device, list(times), dispatches, list(per_dispatch)
    return device, list(times)


def connect(port, token=b'', timeout=30):
    sock = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    sock.sendall(header(HELLO, len(hello(token))) + hello(token))
    return sock, recv_message(sock)


def request(sock, mtype, payload):
    sock.sendall(header(mtype, len(payload)) + payload)
    return recv_message(sock)


def is_error(reply, code, words=''):
    return reply is not None and reply[0] == ERROR and parse_error(reply[1])[0] == code and \
        words in parse_error(reply[1])[1]


# --- the server ---------------------------------------------------------------

class Server:
    def __init__(self, kiln, log_path, *options):
        self.log = open(log_path, 'w+')
        self.proc = subprocess.Popen([kiln, 'rpc-server', '--port', '0'] + list(options),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        self.port = None
        while time.time() < deadline and self.port is None:
            time.sleep(0.05)
            with open(log_path) as f:
                first = f.readline()
            if first.startswith('listening on ') and first.endswith('\n'):
                self.port = int(first.split()[2].rsplit(':', 1)[1])
        assert self.port, 'the server did not start: ' + open(log_path).read()

    def children(self):
        """Processes whose parent is the server (a left-over candidate)."""
        found = []
        for pid in os.listdir('/proc'):
            if pid.isdigit():
                try:
                    stat = open('/proc/%s/stat' % pid).read()
                except OSError:
                    continue
                if int(stat.rsplit(')', 1)[1].split()[1]) == self.proc.pid:
                    found.append(int(pid))
        return found

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--kiln', required=True)
    ap.add_argument('--kilnc', required=True)
    ap.add_argument('--runtime-tests', required=True)
    ap.add_argument('--source-root', required=True)
    ap.add_argument('--workdir', required=True)
    args = ap.parse_args()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    c = Checks()

    env = dict(os.environ, KILN_TEST_WRITE_RPC_BUNDLES=work)
    subprocess.run([args.runtime_tests, '-tc=exec: write the RPC server test bundles'], env=env,
                   check=True, capture_output=True)
    ok, crash, hang = (open(os.path.join(work, n + '.kiln'), 'rb').read() for n in ('ok', 'crash', 'hang'))
    demo = os.path.join(work, 'demo.kiln')
    subprocess.run([args.kilnc, os.path.join(args.source_root, 'demo', 'shapes_cnn.onnx'), '-o', demo],
                   check=True, capture_output=True)

    server = Server(args.kiln, os.path.join(work, 'server.log'), '--io-timeout', '2', '--idle-timeout', '3',
                    '--max-message', '1M')
    port = server.port

    def alive(after):
        """A fresh connection measures the good bundle."""
        try:
            sock, reply = connect(port)
            good = reply is not None and reply[0] == HELLO_REPLY
            if good:
                reply = request(sock, RUN, run_payload(ok))
                good = reply is not None and reply[0] == RUN_REPLY and \
                    all(t > 0 for t in parse_run_reply(reply[1])[1])
            sock.close()
        except OSError as e:
            good, reply = False, e
        c.check(good and server.proc.poll() is None, 'the server measures again after ' + after, reply)

    try:
        # Good runs: kiln bench --rpc (the C++ client), then the raw protocol.
        proc = subprocess.run([args.kiln, 'bench', demo, '--rpc', '127.0.0.1:%d' % port, '--iterations', '5'],
                              capture_output=True, text=True, timeout=120)
        lines = proc.stdout.splitlines()
        c.check(proc.returncode == 0 and lines[0].startswith('remote 127.0.0.1:%d: kiln ' % port) and
                lines[-1].startswith('median_ms=') and lines[-1].endswith('iterations=5'),
                'kiln bench --rpc times the demo model on the server', proc.stdout + proc.stderr)
        sock, reply = connect(port)
        c.check(reply[0] == HELLO_REPLY and struct.unpack_from('<I', reply[1])[0] == VERSION,
                'the handshake answers HelloReply with the protocol version')
        reply = request(sock, RUN, run_payload(ok, repeats=4, number=3))
        device, times = parse_run_reply(reply[1]) if reply and reply[0] == RUN_REPLY else ('', [])
        c.check(device == 'cpu' and len(times) == 4 and all(0 < t < 10**9 for t in times),
                'Run returns one time per repeat', reply)

        # A bundle the runtime refuses: an error, and the connection stays.
        reply = request(sock, RUN, run_payload(b'KILN' + bytes(200)))
        c.check(is_error(reply, E_LOAD), 'a bundle the runtime refuses is a load error', reply)
        reply = request(sock, RUN, run_payload(ok[:len(ok) // 2]))
        c.check(is_error(reply, E_LOAD), 'a truncated bundle is a load error', reply)
        # Fields out of range, and a bundle length past the payload.
        reply = request(sock, RUN, run_payload(ok, repeats=0))
        c.check(is_error(reply, E_BAD, 'repeats'), 'repeats=0 is refused by name', reply)
        reply = request(sock, RUN, run_payload(ok, threads=100000))
        c.check(is_error(reply, E_BAD, 'threads'), 'threads over the limit are refused by name', reply)
        reply = request(sock, RUN, run_payload(ok, repeats=2, number=3, flags=1))
        if reply and reply[0] == RUN_REPLY:
            device, times, dispatches, per_dispatch = parse_run_reply(reply[1], with_dispatches=True)
        else:
            times, dispatches, per_dispatch = [], 0, []
        # The add/scale bundle has two dispatches; each run's total covers them.
        c.check(dispatches == 2 and len(per_dispatch) == 4 and all(p > 0 for p in per_dispatch) and
                all(sum(per_dispatch[2 * r:2 * r + 2]) <= times[r] for r in range(2)),
                'Run with per-dispatch times returns each dispatch\'s time per repeat', reply)
        reply = request(sock, RUN, run_payload(ok, flags=2))
        c.check(is_error(reply, E_BAD, 'flags'), 'unknown Run flags are refused by name', reply)
        bad = run_payload(ok)[:32] + struct.pack('<I', len(ok) + 50) + ok
        reply = request(sock, RUN, bad)
        c.check(is_error(reply, E_BAD, 'runs past the end'), 'a bundle length past the payload is refused', reply)
        reply = request(sock, RUN, run_payload(ok) + b'xx')
        c.check(is_error(reply, E_BAD, 'unread bytes'), 'bytes after the last field are refused', reply)
        reply = request(sock, HELLO, hello())
        c.check(is_error(reply, E_BAD, 'expected Run'), 'a second Hello is refused', reply)
        reply = request(sock, RUN, run_payload(ok))
        c.check(reply is not None and reply[0] == RUN_REPLY, 'the connection still measures after bad requests')
        sock.close()

        # Candidates that crash or hang.
        sock, _ = connect(port)
        reply = request(sock, RUN, run_payload(crash))
        c.check(is_error(reply, E_CRASH, 'signal 11'), 'a candidate that segfaults is reported as crashed', reply)
        t0 = time.time()
        reply = request(sock, RUN, run_payload(hang, timeout_ms=1500))
        took = time.time() - t0
        c.check(is_error(reply, E_TIMEOUT, '1500 ms') and 1.4 < took < 10,
                'a candidate that never returns is killed at its time limit (%.1f s)' % took, reply)
        time.sleep(0.2)
        c.check(server.children() == [], 'no candidate process is left behind', server.children())
        reply = request(sock, RUN, run_payload(ok))
        c.check(reply is not None and reply[0] == RUN_REPLY, 'the same connection measures after a crash and a hang')
        sock.close()
        alive('a crash and a hang')

        # Framing: truncated, stalled, oversized, malformed.
        sock, _ = connect(port)
        sock.sendall(header(RUN, 100) + b'0123456789')
        sock.close()
        alive('a message cut short by a close')

        sock, _ = connect(port)
        sock.sendall(header(RUN, 100) + b'0123456789')
        t0 = time.time()
        reply = recv_message(sock)
        c.check(is_error(reply, E_BAD, 'did not arrive in time') and time.time() - t0 < 10,
                'a stalled payload is dropped after the I/O time-out', reply)
        c.check(recv_message(sock) is None, 'and the connection is closed')
        sock.close()
        alive('a stalled message')

        sock, _ = connect(port)
        sock.sendall(header(RUN, 2 << 20))
        reply = recv_message(sock)
        c.check(is_error(reply, E_LARGE, 'over the limit'), 'a payload over --max-message is refused unread', reply)
        sock.close()
        sock, _ = connect(port)
        sock.sendall(header(ERROR, 1 << 20))
        reply = recv_message(sock)
        c.check(is_error(reply, E_LARGE), 'a small message type claiming 1 MiB is refused', reply)
        sock.close()
        alive('oversized messages')

        for what, head, words in [('a bad magic', header(RUN, 0, magic=0x12345678), 'not a Kiln RPC message'),
                                  ('another protocol version', header(RUN, 0, version=9), 'protocol version 9'),
                                  ('an unknown message type', header(77, 0), 'unknown message type 77')]:
            sock, _ = connect(port)
            sock.sendall(head)
            reply = recv_message(sock)
            c.check(is_error(reply, E_BAD, words), what + ' is refused', reply)
            sock.close()
        alive('malformed headers')

        # Before the handshake: Run first, a bad Hello, garbage, silence.
        sock = socket.create_connection(('127.0.0.1', port), timeout=30)
        reply = request(sock, RUN, run_payload(ok))
        c.check(is_error(reply, E_BAD, 'must be Hello'), 'Run before Hello is refused', reply)
        sock.close()
        sock = socket.create_connection(('127.0.0.1', port), timeout=30)
        reply = request(sock, HELLO, struct.pack('<I', VERSION) + struct.pack('<I', 1000) + b'x')
        c.check(is_error(reply, E_BAD, 'token'), 'a Hello whose token runs past its end is refused', reply)
        sock.close()
        sock = socket.create_connection(('127.0.0.1', port), timeout=30)
        sock.sendall(os.urandom(64))
        reply = recv_message(sock)
        c.check(is_error(reply, E_BAD), 'random bytes are refused', reply)
        sock.close()
        sock = socket.create_connection(('127.0.0.1', port), timeout=30)
        sock.close()
        alive('a client that connects and leaves')
        sock, _ = connect(port)
        t0 = time.time()
        reply = recv_message(sock)
        c.check(is_error(reply, E_BAD, 'sent nothing') and 2.5 < time.time() - t0 < 15,
                'a connection idle past --idle-timeout is closed', reply)
        sock.close()
        alive('an idle client')
        server_log = open(os.path.join(work, 'server.log')).read()
        c.check('crashed (signal 11' in server_log and 'ran past its time limit' in server_log,
                'the server logs the crash and the time-out')
    finally:
        server.stop()

    # Tokens.
    server = Server(args.kiln, os.path.join(work, 'server_token.log'), '--token', 'sesame')
    try:
        sock, reply = connect(server.port, b'wrong')
        c.check(is_error(reply, E_AUTH), 'a wrong token is refused', reply)
        c.check(recv_message(sock) is None, 'and the connection is closed')
        sock.close()
        sock, reply = connect(server.port, b'')
        c.check(is_error(reply, E_AUTH), 'a missing token is refused', reply)
        sock.close()
        sock, reply = connect(server.port, b'sesame')
        c.check(reply[0] == HELLO_REPLY and request(sock, RUN, run_payload(ok))[0] == RUN_REPLY,
                'the right token measures')
        sock.close()
        address = '127.0.0.1:%d' % server.port
        bench = [args.kiln, 'bench', demo, '--rpc', address, '--iterations', '2']
        env = dict(os.environ)
        env.pop('KILN_RPC_TOKEN', None)
        proc = subprocess.run(bench, capture_output=True, text=True, timeout=60, env=env)
        c.check(proc.returncode == 1 and 'unauthorized' in proc.stderr, 'kiln bench --rpc without the token fails',
                proc.stderr)
        proc = subprocess.run(bench + ['--token', 'sesame'], capture_output=True, text=True, timeout=60, env=env)
        c.check(proc.returncode == 0, 'kiln bench --rpc --token measures', proc.stderr)
        proc = subprocess.run(bench, capture_output=True, text=True, timeout=60,
                              env=dict(env, KILN_RPC_TOKEN='sesame'))
        c.check(proc.returncode == 0, 'kiln bench --rpc takes $KILN_RPC_TOKEN', proc.stderr)
    finally:
        server.stop()

    # Signed bundles only: an unsigned one is a load error naming the signature.
    server = Server(args.kiln, os.path.join(work, 'server_keys.log'), '--trusted-key', '11' * 32)
    try:
        sock, _ = connect(server.port)
        reply = request(sock, RUN, run_payload(ok))
        c.check(is_error(reply, E_LOAD, 'sign'), 'with --trusted-key an unsigned bundle is refused', reply)
        sock.close()
    finally:
        server.stop()

    # Command-line refusals.
    proc = subprocess.run([args.kiln, 'rpc-server', '--bind', '0.0.0.0'], capture_output=True, text=True,
                          timeout=30, env=dict(os.environ, KILN_RPC_TOKEN=''))
    c.check(proc.returncode == 2 and 'needs --token' in proc.stderr,
            'listening beyond loopback without a token is refused', proc.stderr)
    proc = subprocess.run([args.kiln, 'bench', demo, '--rpc', '127.0.0.1:1', '--profile'], capture_output=True,
                          text=True, timeout=30)
    c.check(proc.returncode == 2 and '--rpc takes none of' in proc.stderr, 'bench --rpc --profile is refused',
            proc.stderr)
    proc = subprocess.run([args.kiln, 'bench', demo, '--rpc', 'nohost'], capture_output=True, text=True, timeout=30)
    c.check(proc.returncode == 1 and 'HOST:PORT' in proc.stderr, 'a malformed --rpc address is an error', proc.stderr)

    print('%d passed, %d failed' % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == '__main__':
    sys.exit(main())
