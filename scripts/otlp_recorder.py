"""A stand-in OTLP/HTTP receiver that saves every request body it is sent.

    python3 otlp_recorder.py OUT_DIR PORT_FILE

It listens on 127.0.0.1 (a free port, written to PORT_FILE once it listens),
answers each POST /v1/logs or /v1/metrics with an empty protobuf response
(200), and saves the body, decompressed if gzip-encoded, as
OUT_DIR/NNN-logs.pb or NNN-metrics.pb, numbered in the order received. It
handles one request at a time, so the numbers are the send order. SIGTERM
stops it. Used by scripts/record-python-fixture.sh.
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
    count = 0

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            nonlocal count
            signal_name = SIGNALS.get(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if signal_name is None or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_error(415 if signal_name else 404)
                return
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            count += 1
            with open(os.path.join(out_dir, f"{count:03d}-{signal_name}.pb"), "wb") as f:
                f.write(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, fmt, *args):
            sys.stderr.write("recorder: " + (fmt % args) + "\n")

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for serve_forever(), which runs in this thread.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()
    sys.stderr.write(f"recorder: saved {count} requests in {out_dir}\n")


if __name__ == "__main__":
    main()
