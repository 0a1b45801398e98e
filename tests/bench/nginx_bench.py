#!/usr/bin/python3
"""nginx_bench: what ngx_http_skywalking_module costs nginx.

One nginx (a master, 2 workers, the module loaded) proxies a small response from a second
nginx (the backend: no `skywalking on`, so no agent). Its location /on/ has `skywalking on`,
/np/ `skywalking on` with `skywalking_propagate off` (spans, no headers: no second build of the
upstream request), /off/ `skywalking off`; all proxy the same backend. wrk drives the three
in turns (the order alternates each round), in the same run; for each turn the CPU time of the front nginx's
workers (utime + stime from /proc, all threads: the agent's too) is read before and after.
The agent writes its segments with the file reporter to /dev/null (encoding included).

Prints per round and mode: requests/s and worker CPU microseconds per request; the last line
holds the medians over the rounds:
  nginx_rps_on=.. nginx_rps_off=.. nginx_cpu_us_per_req_on=.. nginx_cpu_us_per_req_nopropagate=..
  nginx_cpu_us_per_req_off=.. nginx_cpu_headers_pct=.. (on versus np)
  nginx_cpu_overhead_pct=..   (CPU per request, on versus off: the median of each round's
                                paired ratio)

  nginx_bench.py [--rounds N] [--seconds S] [--connections C] [--smoke]
Paths come from the environment (tests/nginx.cmake): SW_NGINX_MODULE, SW_AGENT_LIB_DIR.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "integration", "nginx"))
from nginx_harness import Nginx, fail  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pids):
    total = 0
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (all threads)
    return total


def wrk(port, path, seconds, connections):
    out = subprocess.run(["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds,
                          "http://127.0.0.1:%d%s" % (port, path)], capture_output=True,
                         text=True, timeout=seconds + 60)
    if out.returncode != 0:
        fail("wrk failed: %s" % out.stderr)
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out.stdout)
    if m is None or "Non-2xx" in out.stdout or "Socket errors" in out.stdout:
        fail("wrk: errors or no count in its output:\n%s" % out.stdout)
    n = int(m.group(1))
    scale = {"s": 1.0, "ms": 1e-3, "m": 60.0}[m.group(3)]
    return n, n / (float(m.group(2)) * scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--seconds", type=int, default=2)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--smoke", action="store_true", help="1 round of 1 s per mode")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.seconds = 1, 1
    backend = Nginx("server { listen 127.0.0.1:{port0}; access_log off;\n"
                    "  location / { return 200 \"ok\\n\"; } }", workers=1).start()
    front = Nginx("server { listen 127.0.0.1:{port0}; access_log off;\n"
                  "  location /on/ { skywalking on; proxy_pass http://127.0.0.1:%d; }\n"
                  "  location /np/ { skywalking on; skywalking_propagate off;\n"
                  "                  proxy_pass http://127.0.0.1:%d; }\n"
                  "  location /off/ { skywalking off; proxy_pass http://127.0.0.1:%d; } }"
                  % (backend.ports[0], backend.ports[0], backend.ports[0]),
                  env={"SW_REPORTER_FILE_PATH": "/dev/null"}).start()
    res = {"on": [], "np": [], "off": []}
    try:
        port = front.ports[0]
        wrk(port, "/off/", 1, a.connections)  # warm up both paths
        wrk(port, "/on/", 1, a.connections)
        for rnd in range(a.rounds):
            for mode in (("on", "np", "off") if rnd % 2 == 0 else ("off", "np", "on")):
                pids = front.worker_pids()
                t0 = cpu_ticks(pids)
                n, rps = wrk(port, "/%s/" % mode, a.seconds, a.connections)
                cpu_s = (cpu_ticks(pids) - t0) / CLK_TCK
                us = cpu_s * 1e6 / n
                res[mode].append((rps, us))
                print("round %d %-3s requests=%d rps=%.0f worker_cpu_us_per_req=%.2f" %
                      (rnd, mode, n, rps, us), flush=True)
    finally:
        front.stop()
        backend.stop()
    med = {m: (statistics.median(r for r, _ in v), statistics.median(u for _, u in v))
           for m, v in res.items()}
    # each round's on/off pair ran back to back: the median of the paired ratios follows the
    # module, the ratio of the medians would also follow the machine's load drifting between
    # rounds
    def paired_pct(a, b):
        ratios = [x[1] / y[1] for x, y in zip(res[a], res[b]) if y[1] > 0]
        return (statistics.median(ratios) - 1.0) * 100.0 if ratios else 0.0
    overhead = paired_pct("on", "off")
    headers = paired_pct("on", "np")
    print("nginx_rps_on=%.0f nginx_rps_off=%.0f nginx_cpu_us_per_req_on=%.2f "
          "nginx_cpu_us_per_req_nopropagate=%.2f nginx_cpu_us_per_req_off=%.2f "
          "nginx_cpu_headers_pct=%.1f nginx_cpu_overhead_pct=%.1f" %
          (med["on"][0], med["off"][0], med["on"][1], med["np"][1], med["off"][1], headers,
           overhead))


if __name__ == "__main__":
    main()
