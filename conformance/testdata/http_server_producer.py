"""A producer on Python's http.server, written as such producers commonly are.

- Its HEAD is its GET (do_HEAD = do_GET): a HEAD's response carries a body.
  GET /<name> responds "body of /<name>" repeated.
- Its POST is an agent's run with a body limit: a Content-Length over 1 MiB
  gets send_error(413) before the body is read (http.server then closes the
  connection, a reset for the body it left unread); a smaller one gets the
  run's events.

Keep-alive (HTTP/1.1), one thread per connection. It listens on 127.0.0.1, a
free port, and prints the port on its first line.
"""
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        body = ("body of %s\n" % self.path).encode() * 8
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        if length > MAX_BODY:
            self.send_error(413, "body over 1 MiB")
            return
        run = json.loads(self.rfile.read(length))
        ids = {"threadId": run["threadId"], "runId": run["runId"]}
        events = [dict(type="RUN_STARTED", **ids), dict(type="RUN_FINISHED", **ids)]
        body = "".join("data: %s\n\n" % json.dumps(e) for e in events).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
