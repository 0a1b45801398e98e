"""The real Debian nginx with ngx_http_skywalking_module, for the module's tests and bench.

Nginx(...) writes a configuration into a temporary prefix (loopback ports chosen by the kernel,
a master and 2 workers), starts /usr/sbin/nginx on it and stops it (every wait bounded, with a
message saying what did not happen). Backend() is a plain HTTP server in this process that
records the trace headers each request brought. PlServer() runs tests/integration/preload's
pl_server under libskywalking-preload.so. traces() reads segment files with swtrace --json.

Paths come from the environment ctest sets (see tests/nginx.cmake): SW_NGINX_MODULE,
SW_AGENT_LIB_DIR, SW_SWTRACE, SW_PL_SERVER, SW_PRELOAD_LIB.
"""
import atexit
import base64
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WAIT_S = 60.0  # generous: the machine may be loaded


_made = []


def tmpdir():
    """A temporary directory, removed when this process exits."""
    d = tempfile.mkdtemp(prefix="sw-nginx-")
    if not _made:
        atexit.register(lambda: [shutil.rmtree(x, ignore_errors=True) for x in _made])
    _made.append(d)
    return d


def fail(msg):
    raise AssertionError(msg)


def wait_for(what, pred, timeout=WAIT_S):
    """Polls pred() until it returns a true value (returned); fails naming `what`."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            fail("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(0.02)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port():
    """A loopback port nothing listens on (bound, then closed)."""
    return free_port()


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def decode_sw8(value):
    """The fields of an sw8 value, as a dict."""
    p = value.split("-")
    if len(p) != 8:
        fail("sw8 %r has %d fields, not 8" % (value, len(p)))
    b = lambda s: base64.b64decode(s).decode()
    return {"sampled": p[0], "trace": b(p[1]), "segment": b(p[2]), "span": int(p[3]),
            "service": b(p[4]), "instance": b(p[5]), "endpoint": b(p[6]), "peer": b(p[7])}


def encode_sw8(trace, segment, span, service="client", instance="client@test",
               endpoint="/client", peer="127.0.0.1:1"):
    e = lambda s: base64.b64encode(s.encode()).decode()
    return "1-%s-%s-%d-%s-%s-%s-%s" % (e(trace), e(segment), span, e(service), e(instance),
                                       e(endpoint), e(peer))


def traces(*files):
    """swtrace --json of the files that exist: a list of traces (dicts)."""
    files = [f for f in files if os.path.exists(f) and os.path.getsize(f) > 0]
    if not files:
        return []
    out = subprocess.run([os.environ["SW_SWTRACE"], "--json"] + files, capture_output=True,
                         timeout=WAIT_S)
    if out.returncode != 0:
        fail("swtrace failed (%d): %s" % (out.returncode, out.stderr.decode(errors="replace")))
    return json.loads(out.stdout)


def segments(tr):
    """Every segment of a list of traces."""
    return [s for t in tr for s in t["segments"]]


def tag(span, key):
    for t in span["tags"]:
        if t["key"] == key:
            return t["value"]
    return None


class Backend:
    """A plain HTTP/1.1 server on loopback: 200 "ok" (503 for paths containing /fail). It
    records (path, headers) of every request; the headers keys are lower case (the last value
    of a repeated header), and "count:<name>" counts the trace headers of each name."""

    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()
        backend = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                h = {k.lower(): v for k, v in self.headers.items()}
                for name in ("sw8", "traceparent", "tracestate", "sw8-correlation", "sw8-x"):
                    h["count:" + name] = len(self.headers.get_all(name) or [])
                with backend.lock:
                    backend.seen.append((self.path, h))
                status = 503 if "/fail" in self.path else 200
                body = b"ok\n"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def requests(self, path_part):
        with self.lock:
            return [(p, h) for p, h in self.seen if path_part in p]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class PlServer:
    """pl_server under libskywalking-preload.so (file reporter to `out`); stops when its stdin
    closes."""

    def __init__(self, tmp, out):
        self.out = out
        port_file = os.path.join(tmp, "pl.port")
        env = dict(os.environ, LD_PRELOAD=os.environ["SW_PRELOAD_LIB"], SW_AGENT_NAME="pl_server",
                   SW_REPORTER_FILE_PATH=out, SW_BUFFER_CONSUME_CYCLE_MS="20")
        env.pop("LD_LIBRARY_PATH", None)
        self.proc = subprocess.Popen([os.environ["SW_PL_SERVER"], "serve", port_file],
                                     stdin=subprocess.PIPE, env=env)
        text = wait_for("pl_server's port file", lambda: os.path.exists(port_file) and
                        open(port_file).read().strip())
        self.port = int(text)
        wait_for("pl_server to listen", lambda: port_open(self.port))

    def stop(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("pl_server did not stop within %.0f s after its stdin closed" % WAIT_S)


class Nginx:
    """nginx in a temporary prefix. `http` is the body of the http{} block; in it the text {port0},
    {port1}, ... is replaced by the ports this instance listens on (chosen here), {tmp} by the
    prefix.
    `env` adds to the environment of the master (the agent's settings)."""

    def __init__(self, http, env=None, nports=1, workers=2, tmp=None):
        self.tmp = tmp or tmpdir()
        self.http = http
        self.env = dict(os.environ)
        self.env["LD_LIBRARY_PATH"] = os.environ["SW_AGENT_LIB_DIR"]
        self.env.setdefault("SW_BUFFER_CONSUME_CYCLE_MS", "20")
        self.env.update(env or {})
        self.workers = workers
        self.nports = nports
        self.conf = os.path.join(self.tmp, "nginx.conf")
        self.pid_file = os.path.join(self.tmp, "nginx.pid")
        self.error_log = os.path.join(self.tmp, "error.log")
        os.makedirs(os.path.join(self.tmp, "tmp"), exist_ok=True)

    def write_conf(self, http=None):
        user = "user root;\n" if os.geteuid() == 0 else ""
        body = (http or self.http).replace("{tmp}", self.tmp)
        for i, p in enumerate(self.ports):
            body = body.replace("{port%d}" % i, str(p))
        t = self.tmp
        # env: a binary upgrade (USR2) execs nginx with only the variables named so
        text = ("load_module %s;\nenv LD_LIBRARY_PATH;\n%sworker_processes %d;\nerror_log %s/error.log notice;\n"
                "pid %s;\nevents { worker_connections 1024; }\nhttp {\n"
                "  access_log off;\n  client_body_temp_path %s/tmp; proxy_temp_path %s/tmp;\n"
                "  fastcgi_temp_path %s/tmp; uwsgi_temp_path %s/tmp; scgi_temp_path %s/tmp;\n"
                "%s\n}\n" % (os.environ["SW_NGINX_MODULE"], user, self.workers, t,
                             self.pid_file, t, t, t, t, t, body))
        with open(self.conf, "w") as f:
            f.write(text)

    def test_config(self):
        """nginx -t: (exit status, output)."""
        self.ports = [free_port() for _ in range(self.nports)]
        self.write_conf()
        out = subprocess.run([NGINX, "-t", "-p", self.tmp, "-c", self.conf], env=self.env,
                             capture_output=True, timeout=WAIT_S)
        return out.returncode, (out.stdout + out.stderr).decode(errors="replace")

    def start(self):
        for attempt in range(5):  # a port taken between free_port() and nginx's bind: again
            self.ports = [free_port() for _ in range(self.nports)]
            self.write_conf()
            out = subprocess.run([NGINX, "-p", self.tmp, "-c", self.conf], env=self.env,
                                 capture_output=True, timeout=WAIT_S)
            if out.returncode == 0:
                break
            if b"Address already in use" not in out.stderr or attempt == 4:
                fail("nginx did not start: %s" % out.stderr.decode(errors="replace"))
        self.master = int(wait_for("nginx's pid file", lambda: os.path.exists(self.pid_file)
                                   and open(self.pid_file).read().strip()))
        for p in self.ports:
            wait_for("nginx to listen on %d" % p, lambda: port_open(p))
        wait_for("%d workers" % self.workers, lambda: len(self.worker_pids()) == self.workers)
        return self

    def children(self, pid):
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def worker_pids(self, master=None):
        return self.children(master or self.master)

    def reload(self):
        """nginx -s reload (SIGHUP); waits until the master runs a new set of workers and the
        old ones have finished their requests and exited."""
        old = set(self.worker_pids())
        os.kill(self.master, signal.SIGHUP)
        wait_for("new workers after a reload, the old ones gone", lambda: (
            lambda now: len(now) == self.workers and not (set(now) & old))(self.worker_pids()))

    def stop(self):
        """Graceful stop (SIGQUIT); waits for the master to exit."""
        try:
            os.kill(self.master, signal.SIGQUIT)
        except ProcessLookupError:
            return
        wait_for("nginx's master %d to exit" % self.master, lambda: not pid_alive(self.master))

    def log(self):
        with open(self.error_log, errors="replace") as f:
            return f.read()

    def worker_stats(self):
        """The counters every stopped worker logged: a list of dicts."""
        out = []
        for line in self.log().splitlines():
            if "skywalking: worker" not in line or "stopped" not in line:
                continue
            words = line.replace(",", "").split()
            i = words.index("finished")
            out.append({"finished": int(words[i + 1]), "reported": int(words[i + 3]),
                        "dropped": int(words[i + 5]), "failed": int(words[i + 7]),
                        "open": int(words[i + 10])})
        return out

    def check_no_crash(self):
        for line in self.log().splitlines():
            if "exited on signal" in line:
                fail("an nginx process crashed: %s" % line)


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def http_get(port, path, headers=None, timeout=WAIT_S):
    """One GET on a new connection: (status, body)."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def raw_request(port, data, timeout=WAIT_S):
    """Sends raw bytes, returns the status code of the answer (0: none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        buf = b""
        while b"\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
    parts = buf.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
