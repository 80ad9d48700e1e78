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
  ``status.allocatable`` and the ``Ready`` condition;
* pods, which the tests create as a client would (``POST /api/v1/namespaces/{ns}/pods``, 409
  AlreadyExists for a name taken; ``DELETE .../pods/{name}``), and which the role lists
  (``kubernetes.core.k8s_info``): ``GET /api/v1/pods`` (every namespace) and
  ``GET /api/v1/namespaces/{ns}/pods``, both with ``fieldSelector``, and ``GET .../pods/{name}``.
  Field selectors are read as apimachinery's ``fields.ParseSelector`` reads them (terms joined by
  ``,``; ``=``, ``==`` or ``!=``; a backslash escapes) and matched against the fields the pod registry
  makes selectable (pkg/registry/core/pod/strategy.go ``PodToSelectableFields``: ``spec.nodeName``,
  ``spec.restartPolicy``, ``spec.schedulerName``, ``spec.serviceAccountName``, ``spec.hostNetwork``,
  ``status.phase``, ``status.podIP``, ``status.nominatedNodeName``, ``metadata.name``,
  ``metadata.namespace``); any other field is a 400 ``field label not supported``, as the pod's
  field label conversion (pkg/apis/core/v1/conversion.go) answers. Namespaces are not objects
  here: a pod may be created in any.

Usage: python3 apiserver.py PORT ADDRESS [ADDRESS ...]   (runs until SIGTERM)
"""

from __future__ import annotations

import http.server
import json
import re
import signal
import sys
import threading
import urllib.parse
import uuid

NODES = {}
LOCK = threading.Lock()
NODE_PATH = re.compile(r'^/api/v1/nodes/([a-z0-9.-]+)(/status)?$')
PODS = {}  # (namespace, name) -> Pod
POD_LIST_PATH = re.compile(r'^/api/v1(?:/namespaces/([a-z0-9-]+))?/pods$')
POD_PATH = re.compile(r'^/api/v1/namespaces/([a-z0-9-]+)/pods/([a-z0-9.-]+)$')
POD_FIELDS = {
    'spec.nodeName': lambda p: p.get('spec', {}).get('nodeName', ''),
    'spec.restartPolicy': lambda p: p.get('spec', {}).get('restartPolicy', ''),
    'spec.schedulerName': lambda p: p.get('spec', {}).get('schedulerName', ''),
    'spec.serviceAccountName': lambda p: p.get('spec', {}).get('serviceAccountName', ''),
    'spec.hostNetwork': lambda p: 'true' if p.get('spec', {}).get('hostNetwork') else 'false',
    'status.phase': lambda p: p.get('status', {}).get('phase', ''),
    'status.podIP': lambda p: p.get('status', {}).get('podIP', ''),
    'status.nominatedNodeName': lambda p: p.get('status', {}).get('nominatedNodeName', ''),
    'metadata.name': lambda p: p['metadata']['name'],
    'metadata.namespace': lambda p: p['metadata']['namespace'],
}
RESOURCES = {
    'kind': 'APIResourceList', 'apiVersion': 'v1', 'groupVersion': 'v1',
    'resources': [
        {'name': 'nodes', 'singularName': 'node', 'namespaced': False, 'kind': 'Node',
         'verbs': ['get', 'list', 'update', 'patch'], 'shortNames': ['no']},
        {'name': 'nodes/status', 'singularName': '', 'namespaced': False, 'kind': 'Node',
         'verbs': ['get', 'update', 'patch']},
        {'name': 'pods', 'singularName': 'pod', 'namespaced': True, 'kind': 'Pod',
         'verbs': ['create', 'delete', 'get', 'list'], 'shortNames': ['po']},
    ],
}


def _split_unescaped(text, separator):
    """fields.ParseSelector's splitTerms / splitTerm: split at ``separator`` not preceded by a backslash."""
    parts, current, escaped = [], '', False
    for char in text:
        if escaped:
            current += '\\' + char
            escaped = False
        elif char == '\\':
            escaped = True
        elif char == separator:
            parts.append(current)
            current = ''
        else:
            current += char
    return parts + [current + ('\\' if escaped else '')]


def _unescape(value):
    return re.sub(r'\\(.)', r'\1', value)


def _split_term(term):
    """fields.ParseSelector's splitTerm: the leftmost unescaped operator, trying !=, == and = at each place."""
    escaped = False
    for index, char in enumerate(term):
        if escaped:
            escaped = False
        elif char == '\\':
            escaped = True
        else:
            for operator in ('!=', '==', '='):
                if term.startswith(operator, index):
                    return term[:index], operator, term[index + len(operator):]
    return None


def parse_field_selector(text):
    """[(field, '=' or '!=', value)]; raises ValueError as ParseSelector does for a term without an operator."""
    requirements = []
    for term in _split_unescaped(text, ','):
        if not term:
            continue
        parts = _split_term(term)
        if parts is None:
            raise ValueError("invalid selector: '%s'; can't understand '%s'" % (text, term))
        field, operator, value = parts
        requirements.append((field, '!=' if operator == '!=' else '=', _unescape(value)))
    return requirements


def pod_matches(pod, requirements):
    for field, operator, value in requirements:
        if (POD_FIELDS[field](pod) == value) != (operator == '='):
            return False
    return True


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
        elif POD_LIST_PATH.match(path):
            self._list_pods(POD_LIST_PATH.match(path).group(1))
        elif POD_PATH.match(path):
            with LOCK:
                pod = PODS.get(POD_PATH.match(path).groups())
            if pod is None:
                self._not_found('pods "%s"' % POD_PATH.match(path).group(2))
            else:
                self._send(200, pod)
        else:
            match = NODE_PATH.match(path)
            with LOCK:
                node = NODES.get(match.group(1)) if match else None
            if node is None:
                self._not_found('nodes "%s"' % (match.group(1) if match else path))
            else:
                self._send(200, node)

    def _bad_request(self, message):
        self._send(400, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'reason': 'BadRequest',
                         'code': 400, 'message': message})

    def _list_pods(self, namespace):
        query = urllib.parse.parse_qs(self.path.split('?', 1)[1] if '?' in self.path else '')
        try:
            requirements = parse_field_selector((query.get('fieldSelector') or [''])[0])
            # The field label conversion refuses an unknown field whether or not any pod would be compared.
            for field, _operator, _value in requirements:
                if field not in POD_FIELDS:
                    raise KeyError(field)
            with LOCK:
                pods = [pod for (pod_namespace, _name), pod in sorted(PODS.items())
                        if namespace in (None, pod_namespace) and pod_matches(pod, requirements)]
        except ValueError as exc:
            self._bad_request(str(exc))
            return
        except KeyError as exc:
            self._bad_request('field label not supported: %s' % exc.args[0])
            return
        self._send(200, {'kind': 'PodList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': '1'},
                         'items': pods})

    def _body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return json.loads(self.rfile.read(length) or b'{}')

    def do_POST(self):  # noqa: N802 - http.server's name
        match = POD_LIST_PATH.match(self.path.split('?', 1)[0])
        try:
            pod = self._body()
        except ValueError:
            self._bad_request('invalid JSON')
            return
        if not match or not match.group(1) or pod.get('kind') != 'Pod':
            self._not_found(self.path)
            return
        namespace, name = match.group(1), (pod.get('metadata') or {}).get('name')
        pod.setdefault('apiVersion', 'v1')
        pod['metadata']['namespace'] = namespace
        pod['metadata'].setdefault('uid', str(uuid.uuid4()))
        pod.setdefault('status', {}).setdefault('phase', 'Pending')
        with LOCK:
            if (namespace, name) in PODS:
                self._send(409, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'reason': 'AlreadyExists',
                                 'code': 409, 'message': 'pods "%s" already exists' % name})
                return
            PODS[(namespace, name)] = pod
        self._send(201, pod)

    def do_DELETE(self):  # noqa: N802 - http.server's name
        match = POD_PATH.match(self.path.split('?', 1)[0])
        with LOCK:
            pod = PODS.pop(match.groups(), None) if match else None
        if pod is None:
            self._not_found(self.path)
        else:
            self._send(200, pod)

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
