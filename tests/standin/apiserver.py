"""A stand-in Kubernetes API server holding Node objects, for the role's API checks in the multi-node tests.

No kube-apiserver can be installed here (no registry we reach ships one). This process serves the
part of the core/v1 API that the rollout reads and the stand-in kubelets write, over plain HTTP
on the addresses it is given (loopback and the host side of the test nodes' veth links):

* discovery, as client-go and the Python client's dynamic discovery request it: ``/version``,
  ``/api`` (APIVersions), ``/apis`` (an empty APIGroupList), ``/api/v1`` (APIResourceList
  with ``nodes`` and ``nodes/status``);
* ``GET /api/v1/nodes`` and ``GET /api/v1/nodes/{name}`` (404 as a ``Status`` object);
* ``PUT /api/v1/nodes/{name}/status``, which the stand-in kubelet sends the way the real kubelet's
  node status loop does (pkg/kubelet/kubelet_node_status.go): ``status.capacity``,
  ``status.allocatable`` and the ``Ready`` condition.

Usage: python3 apiserver.py PORT ADDRESS [ADDRESS ...]   (runs until SIGTERM)
"""

from __future__ import annotations

import http.server
import json
import re
import signal
import sys
import threading

NODES = {}
LOCK = threading.Lock()
NODE_PATH = re.compile(r'^/api/v1/nodes/([a-z0-9.-]+)(/status)?$')
RESOURCES = {
    'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': 'v1',
    'resources': [
        {'name': 'nodes', 'singularName': 'node', 'namespaced': False, 'kind': 'Node',
         'verbs': ['get', 'list', 'update', 'patch'], 'shortNames': ['no']},
        {'name': 'nodes/status', 'singularName': '', 'namespaced': False, 'kind': 'Node',
         'verbs': ['get', 'update', 'patch']},
    ],
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _send(self, code, body):
        data = json.dumps(body).encode('utf-8')
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self, what):
        self._send(404, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'reason': 'NotFound',
                         'code': 404, 'message': '%s not found' % what})

    def do_GET(self):  # noqa: N802 - http.server's name
        path = self.path.split('?', 1)[0]
        if path == '/version':
            self._send(200, {'major': '1', 'minor': '31', 'gitVersion': 'v1.31.0-nodealloc-standin',
                             'platform': 'linux/amd64'})
        elif path == '/api':
            self._send(200, {'kind': 'APIVersions', 'versions': ['v1'], 'serverAddressByClientCIDRs': []})
        elif path == '/apis':
            self._send(200, {'kind': 'APIGroupList', 'apiVersion': 'v1', 'groups': []})
        elif path == '/api/v1':
            self._send(200, RESOURCES)
        elif path == '/api/v1/nodes':
            with LOCK:
                items = list(NODES.values())
            self._send(200, {'kind': 'NodeList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': '1'},
                             'items': items})
        else:
            match = NODE_PATH.match(path)
            with LOCK:
                node = NODES.get(match.group(1)) if match else None
            if node is None:
                self._not_found('nodes "%s"' % (match.group(1) if match else path))
            else:
                self._send(200, node)

    def do_PUT(self):  # noqa: N802 - http.server's name
        match = NODE_PATH.match(self.path.split('?', 1)[0])
        length = int(self.headers.get('Content-Length') or 0)
        try:
            body = json.loads(self.rfile.read(length) or b'{}')
        except ValueError:
            self._send(400, {'kind': 'Status', 'status': 'Failure', 'code': 400, 'message': 'invalid JSON'})
            return
        if not match or body.get('kind') != 'Node':
            self._not_found(self.path)
            return
        name = match.group(1)
        body.setdefault('apiVersion', 'v1')
        body.setdefault('metadata', {})['name'] = name
        with LOCK:
            NODES[name] = body
        self._send(200, body)

    def log_message(self, *args):
        pass


def main(argv):
    port, addresses = int(argv[0]), argv[1:]
    servers = [http.server.ThreadingHTTPServer((address, port), Handler) for address in addresses]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_a: stop.set())
    print('listening on %s port %d' % (', '.join(addresses), port), flush=True)
    stop.wait()
    for server in servers:
        server.shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
