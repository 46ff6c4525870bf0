"""A stand-in OTLP/HTTP receiver that saves every request body it is sent.

    python3 otlp_recorder.py OUT_DIR PORT_FILE [PORT]

It listens on 127.0.0.1 (PORT, else a free port; written to PORT_FILE once it
listens), answers each POST /v1/logs or /v1/metrics with an empty response
(200), and saves the body, decompressed if gzip-encoded, as
OUT_DIR/NNN-logs.pb or NNN-metrics.pb (NNN-logs.json for an OTLP/JSON body:
prime_otel's start event), numbered in the order received. It has no run
status route (a GET answers 404, as an older collector would), so init()
goes on unchecked. It handles one request at a time, so the numbers are the
send order. SIGTERM stops it. Used by scripts/record-python-fixture.sh.
"""

import gzip
import http.server
import os
import signal
import sys
import threading

SIGNALS = {"/v1/logs": "logs", "/v1/metrics": "metrics"}


def main():
    out_dir, port_file = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    count = 0

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            nonlocal count
            signal_name = SIGNALS.get(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            ext = {"application/x-protobuf": "pb", "application/json": "json"}.get(self.headers.get("Content-Type"))
            if signal_name is None or ext is None:
                self.send_error(415 if signal_name else 404)
                return
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            count += 1
            with open(os.path.join(out_dir, f"{count:03d}-{signal_name}.{ext}"), "wb") as f:
                f.write(body)
            self.send_response(200)
            self.send_header("Content-Type", self.headers.get("Content-Type"))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            self.send_error(404)

        def log_message(self, fmt, *args):
            sys.stderr.write("recorder: " + (fmt % args) + "\n")

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    # shutdown() waits for serve_forever(), which runs in this thread.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
    sys.stderr.write(f"recorder: saved {count} requests in {out_dir}\n")


if __name__ == "__main__":
    main()
