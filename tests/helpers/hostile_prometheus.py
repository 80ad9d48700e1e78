"""A Prometheus that answers what it should not, on 127.0.0.1, for the controller's trust tests (issue 44).

``HostilePrometheus(case)`` serves /api/v1/query_range and /api/v1/query on a free loopback port until ``stop()``:
each request is answered as ``case`` says (CASES), and every request is recorded (path, headers, form) so that a
test can tell what the client sent where. Every loop is bounded: a stream stops when the client goes away or after
``MAX_SEND_SECONDS``; nothing is sent anywhere but to the client that asked.

It imports nothing from the collection: the answers are built from Prometheus' documented API format here.
"""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time
import urllib.parse

MAX_SEND_SECONDS = 60
GIB = 1 << 30


def _grid(form):
    start, end = int(float(form['start'])), int(float(form['end']))
    step = int(form['step'].rstrip('s'))
    return list(range(start, end + 1, step))


def matrix(series):
    """A range query's answer: ``series`` is [(labels, [[t, 'value'], ...]), ...]."""
    return {'status': 'success', 'data': {'resultType': 'matrix',
                                          'result': [{'metric': labels, 'values': values} for labels, values in series]}}


def steady(form, value='536870912'):
    """One series with ``value`` at every step the request asked for: what a healthy Prometheus answers."""
    return matrix([({'node': 'n1'}, [[t, value] for t in _grid(form)])])


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = 'HostilePrometheus/1'
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):  # quiet: the tests read ``requests``
        pass

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get('Content-Length') or 0)
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        owner = self.server.owner
        owner.requests.append({'path': self.path, 'headers': dict(self.headers.items()), 'form': form,
                               'port': self.server.server_address[1]})
        getattr(self, '_case_' + owner.case)(form)

    do_GET = do_POST  # noqa: N815

    def _json(self, document, status=200, headers=()):
        body = json.dumps(document).encode()
        self._bytes(body, status, headers)

    def _bytes(self, body, status=200, headers=(), content_type='application/json'):
        self.send_response(status)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, pieces, declared=None):
        """Send ``pieces`` (an iterator of bytes) as the body, until the client leaves or MAX_SEND_SECONDS."""
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        if declared is not None:
            self.send_header('Content-Length', str(declared))
        self.send_header('Connection', 'close')
        self.end_headers()
        deadline = time.monotonic() + MAX_SEND_SECONDS
        try:
            for piece in pieces:
                if time.monotonic() > deadline or self.server.owner.stopping:
                    break
                self.wfile.write(piece)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    # The cases. Each is one thing the issue measured.
    def _case_healthy(self, form):
        self._json(steady(form) if 'start' in form else
                   {'status': 'success', 'data': {'resultType': 'vector', 'result': []}})

    def _case_redirect(self, form):
        self._bytes(b'', 302, [('Location', self.server.owner.location)])

    def _case_huge_body(self, form):
        # A JSON answer that never ends: '{"status":"success","data":{"resultType":"matrix","result":[' and points.
        head = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":['
        point = b'[1700000000,"1"],' * 4096

        def pieces():
            yield head
            while True:
                yield point
        self._stream(pieces(), declared=self.server.owner.declared_bytes)

    def _case_gzip_bomb(self, form):
        # 64 MiB of zeros inside a JSON string, compressed to about 64 KiB, sent as gzip though identity was asked.
        body = gzip.compress(b'{"status":"success","data":{"resultType":"matrix","result":[],"x":"' + b'0' * (64 << 20)
                             + b'"}}', compresslevel=9)
        self._bytes(body, headers=[('Content-Encoding', 'gzip')])

    def _case_many_points(self, form):
        # 250,000 points in one series: within the byte cap, above the points cap.
        start = int(float(form.get('start', 1700000000)))
        self._json(matrix([({'node': 'n1'}, [[start + i, '1'] for i in range(250000)])]))

    def _case_slow_body(self, form):
        body = json.dumps(steady(form)).encode() if 'start' in form else b'{}'

        def pieces():
            for index in range(len(body)):
                yield body[index:index + 1]
                time.sleep(1)
        self._stream(pieces(), declared=len(body))

    def _case_slow_headers(self, form):
        line = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
        deadline = time.monotonic() + MAX_SEND_SECONDS
        try:
            for index in range(len(line)):
                if time.monotonic() > deadline or self.server.owner.stopping:
                    break
                self.wfile.write(line[index:index + 1])
                self.wfile.flush()
                time.sleep(1)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _case_deep_nesting(self, form):
        self._bytes(b'[' * 100000 + b']' * 100000)

    def _case_number_for_list(self, form):
        self._json({'status': 'success', 'data': {'resultType': 'matrix', 'result': 5}})

    def _case_values_not_pairs(self, form):
        self._json({'status': 'success', 'data': {'resultType': 'matrix',
                                                  'result': [{'metric': {}, 'values': [[1, 2, 3]]}]}})

    def _case_outside_window(self, form):
        # The asked steps, and 20,000 more from years before the window (the "20001 samples over 221265.9 h").
        asked = steady(form)['data']['result'][0]['values']
        old = [[1000000 + 60 * i, '536870912'] for i in range(20000)]
        self._json(matrix([({'node': 'n1'}, old + asked)]))

    def _case_hostile_label(self, form):
        # kube_node_labels as a node's own kubelet credentials can set it: a class value that is no label value.
        label = 'label_karpenter_sh_nodepool'
        if 'kube_node_labels' in form.get('query', ''):
            result = [{'metric': {'node': 'n1', label: 'batch'}, 'value': [1, '1']},
                      {'metric': {'node': 'evil', label: 'batch\nauthorization:\n  mode: AlwaysAllow'},
                       'value': [1, '1']}]
            self._json({'status': 'success', 'data': {'resultType': 'vector', 'result': result}})
        elif 'start' in form:
            self._json(steady(form))
        else:
            self._json({'status': 'success', 'data': {'resultType': 'vector',
                                                      'result': [{'metric': {}, 'value': [1, '1']}]}})

    def _case_error_with_secret_echo(self, form):
        # A proxy that quotes the request's Authorization header back in its error.
        self._bytes(('denied for %s' % self.headers.get('Authorization')).encode(), 500, content_type='text/plain')


class HostilePrometheus:
    """A loopback server answering every request as ``case`` says; ``url``, ``requests``, ``stop()``."""

    def __init__(self, case='healthy', location='', declared_bytes=None):
        self.case, self.location, self.declared_bytes = case, location, declared_bytes
        self.requests, self.stopping = [], False
        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        self._server.daemon_threads = True
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self._server.server_address[1]

    def stop(self):
        self.stopping = True
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
