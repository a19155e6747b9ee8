"""nginx with a 1 ms timer on loopback: the echo module's `echo_sleep 0.001`
(Debian: libnginx-mod-http-echo) arms ngx_add_timer(1 ms); nginx's timers are
whole ms on a clock floored to the ms, so its 1 ms is genuine.

usage: nginx_timer.py [sleep_ms=1] [count=300]
Runs nginx in the foreground (one process, no master) from a temporary
prefix, sends count/10 requests of 10 sleeps each from this (unpreloaded)
client, stops nginx with SIGQUIT (it exits through exit(), so countwaits
writes its line) and prints the report line; lateness is per request
(elapsed / 10 - sleep), so p50/p90 are over requests.
Environment: MX_CHILD_PRELOAD becomes nginx's LD_PRELOAD (the harness's
preload must not reach this Python client); NGINX (default: nginx on PATH
or /usr/sbin/nginx). Exits 77 when nginx or the echo module is missing."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

PER_REQUEST = 10
ECHO = "/usr/lib/nginx/modules/ngx_http_echo_module.so"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return data
            data += chunk


def main():
    sleep_ms = float(sys.argv[1]) if len(sys.argv) > 1 else 1
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    nginx = os.environ.get("NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        print("skip: no nginx", file=sys.stderr)
        sys.exit(77)
    if not os.path.exists(ECHO):
        print("skip: no echo module (libnginx-mod-http-echo)", file=sys.stderr)
        sys.exit(77)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="ef-nginx-") as prefix:
        sleeps = " ".join([f"echo_sleep {sleep_ms / 1000:.3f};"] * PER_REQUEST)
        temps = " ".join(f"{d}_temp_path {prefix}/{d};"
                         for d in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = f"""load_module {ECHO};
daemon off; master_process off; pid {prefix}/nginx.pid; error_log stderr warn;
events {{ worker_connections 64; }}
http {{ access_log off; {temps}
  server {{ listen 127.0.0.1:{port};
    location /t {{ {sleeps} echo ok; }}
    location /ping {{ echo pong; }} }} }}
"""
        with open(f"{prefix}/nginx.conf", "w") as f:
            f.write(conf)
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if os.environ.get("MX_CHILD_PRELOAD"):
            env["LD_PRELOAD"] = os.environ["MX_CHILD_PRELOAD"]
        proc = subprocess.Popen([nginx, "-p", prefix, "-e", "stderr", "-c",
                                 f"{prefix}/nginx.conf"], env=env)
        try:
            for _ in range(200):
                try:
                    if b"pong" in get(port, "/ping"):
                        break
                except OSError:
                    time.sleep(0.01)
            else:
                sys.exit("nginx did not answer")
            late = []
            started = time.perf_counter_ns()
            for _ in range(max(1, count // PER_REQUEST)):
                t0 = time.perf_counter_ns()
                if b"ok" not in get(port, "/t"):
                    sys.exit("bad answer from nginx")
                late.append((time.perf_counter_ns() - t0) // PER_REQUEST
                            - int(sleep_ms * 1e6))
            elapsed_started = started
        finally:
            proc.send_signal(signal.SIGQUIT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    # One fire per echo_sleep; lateness over requests.
    n = len(late)
    late.sort()
    elapsed = (time.perf_counter_ns() - elapsed_started) // 1000000
    print(f"fires={n * PER_REQUEST} lateness_p50_us={late[n // 2] // 1000} "
          f"lateness_p90_us={late[n * 9 // 10] // 1000} lateness_p99_us={late[n * 99 // 100] // 1000} "
          f"elapsed_ms={elapsed}", flush=True)


if __name__ == "__main__":
    main()
