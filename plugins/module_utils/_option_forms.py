# Private to nodealloc.kubelet: not a public API, may change without notice.
r"""The form of option values that end up in a systemd unit, an environment file, a URL or a path on the node.

Each check returns None when the value has the form, else the rule it breaks (a phrase after the option's name).
A value that passes reaches its unit file or command line as the one token it was meant to be: systemd would
otherwise split it at whitespace, unquote it, expand ``%`` specifiers and ``$VAR`` in ExecStart= (systemd.service(5),
"Command lines"), and kubeadm's environment file would end its KUBELET_EXTRA_ARGS="..." at a quote.

Every value for a unit file is printable ASCII with no surrounding whitespace (issue 35, confirmed with
``systemd-analyze verify``): a leading newline left the timer without its interval, a control character made systemd
ignore it (one run per boot), digits of another script in ``CPUQuota``/``MemoryMax`` were ignored (no limits), and
a file directly under ``/`` gave ``ReadWritePaths=-/``, which cancels ``ProtectSystem=strict``. The patterns use
``[0-9]`` (Python's ``\d`` takes any script's digits) and no nested repetition (no backtracking on long input).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Characters that change what systemd or a shell-style environment file reads from a value.
_UNIT_SPECIAL = set('"\'\\$%`;')

# systemd.resource-control(5), CPUQuota=: "a percentage value, suffixed with %"; values above 100% are allowed and
# src/core/load-fragment.c (config_parse_cpu_quota) refuses 0.
# systemd parses percentages to hundredths (parse_permyriad): a third decimal is an error, so is a quota past INT_MAX
# permyriad; sizes (parse_size) must stay below 2^64 and above 0; time spans below USEC_INFINITY.
_PERCENT = re.compile(r'^([0-9]+(?:\.[0-9]{1,2})?)%$')
_MAX_CPU_QUOTA_PERCENT = 21474836
_SIZE_SUFFIXES = ' KMGTPE'
_MAX_BYTES = (1 << 64) - 1
_MAX_USEC = 1 << 63  # below USEC_INFINITY with room for systemd's own rounding (584,542 years is refused there)
# systemd.resource-control(5), MemoryMax=: bytes, with K, M, G, T (base 1024) as in parse_size(), a percentage of
# physical memory, or "infinity".
_BYTES = re.compile(r'^[0-9]+(?:\.[0-9]+)?[KMGTPE]?$|^[0-9]+(?:\.[0-9]{1,2})?%$|^infinity$')
# systemd.time(7), "Parsing time spans": numbers with these units, a bare number is seconds, parts may be joined
# with or without spaces ("1min", "2h 30min", "90").
_TIME_UNITS = ('usec|us|msec|ms|seconds|second|sec|s|minutes|minute|min|months|month|M|m|hours|hour|hr|h|'
               'days|day|d|weeks|week|w|years|year|y')
# A number, then a unit or at least a blank before the next number (systemd reads a number without a unit as
# seconds and goes on): a run of digits is one number only, so a failed match never tries every split of it.
_TIMESPAN = re.compile(r'^(?:[0-9]+(?:\.[0-9]+)?(?: *(?:%s) *| +))*(?:[0-9]+(?:\.[0-9]+)?)?$' % _TIME_UNITS)
_TIMESPAN_PART = re.compile(r'([0-9]+(?:\.[0-9]+)?) *(%s)?' % _TIME_UNITS)
# src/basic/time-util.h: microseconds per unit (a month is 30.44 days, a year 365.25 days).
_USEC = dict([(unit, 1) for unit in ('usec', 'us')] + [(unit, 1000) for unit in ('msec', 'ms')]
             + [(unit, 10 ** 6) for unit in ('seconds', 'second', 'sec', 's')]
             + [(unit, 60 * 10 ** 6) for unit in ('minutes', 'minute', 'min', 'm')]
             + [(unit, 3600 * 10 ** 6) for unit in ('hours', 'hour', 'hr', 'h')]
             + [(unit, 86400 * 10 ** 6) for unit in ('days', 'day', 'd')]
             + [(unit, 7 * 86400 * 10 ** 6) for unit in ('weeks', 'week', 'w')]
             + [(unit, 2629800 * 10 ** 6) for unit in ('months', 'month', 'M')]
             + [(unit, 31557600 * 10 ** 6) for unit in ('years', 'year', 'y')])
# src/basic/unit-name.c: VALID_CHARS (letters, digits, ":-_.\") plus "@" between a template and its instance;
# UNIT_NAME_MAX is 256 with the terminating NUL.
_UNIT_NAME = re.compile(r'^[A-Za-z0-9:_.\\@-]{1,255}$')


def _control_character(text):
    # C0, DEL and C1 (U+0080-U+009F, a terminal's CSI among them): each a control character (Unicode category Cc).
    return any(ord(c) < 32 or 127 <= ord(c) <= 159 for c in text)


def unit_text(text):
    """Printable ASCII without surrounding whitespace: what every value written into a unit file must be."""
    if any(not 32 <= ord(c) < 127 for c in text):
        return 'must be printable ASCII (no control characters, no other scripts), as it goes into a systemd unit'
    if text != text.strip():
        return 'must not start or end with whitespace (it goes into a systemd unit)'
    return None


def node_path(text):
    """An absolute path on the node, one line (modules and the kubelet take them as they are)."""
    if _control_character(text):
        return 'must not contain control characters (a newline, a tab)'
    if not text.startswith('/'):
        return 'must be an absolute path on the node (starting with /)'
    return None


def unit_path(text):
    """An absolute path that is written into a unit file or an environment file as one token."""
    reason = node_path(text) or unit_text(text)
    if reason:
        return reason
    if not [part for part in text.split('/') if part not in ('', '.')]:
        # ReadWritePaths=-/ would cancel ProtectSystem=strict.
        return 'must not be / (the sampler would be given / to write)'
    found = sorted(c for c in set(text) if c in _UNIT_SPECIAL or c.isspace())
    if found:
        return ('must not contain whitespace or any of %s (it is written into a systemd unit or environment file); '
                'found %s' % (' '.join(sorted(_UNIT_SPECIAL)), ' '.join(repr(c) for c in found)))
    return None


def unit_file_path(text):
    """A file whose directory goes into a unit (the sampler writes there): ``unit_path``, and not directly under /."""
    reason = unit_path(text)
    if reason:
        return reason
    if len([part for part in text.split('/') if part not in ('', '.')]) < 2:
        return 'must not be directly under / (the sampler would be given / to write: ReadWritePaths=-/)'
    return None


def http_url(text):
    """An http or https URL with a host, as the on-node step's urllib opens it."""
    if _control_character(text) or any(c.isspace() for c in text):
        return 'must be a URL without whitespace or control characters'
    parts = urlsplit(text)
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        return 'must be an http:// or https:// URL with a host, such as http://127.0.0.1:10248/healthz'
    try:
        parts.port  # pylint: disable=pointless-statement  # raises on a port that is not a number or out of range
    except ValueError:
        return 'must have a port from 1 to 65535'
    return None


def prometheus_url(text):
    """``http_url``, without a user name or password in it: those go in their own options, which are sent only to
    this origin and never printed, where a URL is shown in reasons, reports and the job output."""
    reason = http_url(text)
    if reason:
        return reason
    if '@' in urlsplit(text).netloc:
        return ('must not hold a user name or password (user:password@): set reservations_prometheus_username and '
                '_password, which are never printed')
    return None


def header_value(text):
    """A value sent in an HTTP header (a bearer token, a basic-auth user name or password): no control character
    (a newline a file lookup left at its end would end the header), no surrounding whitespace."""
    if _control_character(text) or text != text.strip():
        return ('must not contain control characters or surrounding whitespace (a newline left by a file lookup: '
                'add | trim); it is sent in an HTTP header')
    return None


def systemd_percent(text):
    reason = unit_text(text)
    if reason:
        return reason
    match = _PERCENT.match(text)
    if not match:
        return "must be a percentage with a % sign and at most two decimals, such as 20% (systemd's CPUQuota=)"
    if float(match.group(1)) <= 0:
        return 'must be more than 0% (systemd refuses CPUQuota=0%)'
    if float(match.group(1)) > _MAX_CPU_QUOTA_PERCENT:
        return 'must be at most %s%% (systemd ignores a larger CPUQuota=)' % _MAX_CPU_QUOTA_PERCENT
    return None


def systemd_bytes(text):
    reason = unit_text(text)
    if reason:
        return reason
    if not _BYTES.match(text):
        return ("must be bytes with an optional K, M, G, T, P or E suffix, a percentage with at most two decimals, or "
                "infinity (systemd's MemoryMax=)")
    if text == 'infinity':
        return None
    if text.endswith('%'):
        return None if 0 < float(text[:-1]) <= 100 else 'must be a percentage above 0% and at most 100%'
    number, suffix = (text[:-1], text[-1]) if text[-1] in _SIZE_SUFFIXES else (text, '')
    size = float(number) * 1024 ** (_SIZE_SUFFIXES.index(suffix) if suffix else 0)  # inf for 400 digits: refused
    if not 1 <= size < _MAX_BYTES:
        return 'must be at least 1 byte and less than 16E (systemd ignores MemoryMax= out of that range)'
    return None


def systemd_timespan(text):
    reason = unit_text(text)
    if reason:
        return reason
    if not text or not _TIMESPAN.match(text):
        return 'must be a systemd time span such as 30s, 1min or 2h 30min (systemd.time(7))'
    microseconds = sum(float(number) * _USEC[unit or 's'] for number, unit in _TIMESPAN_PART.findall(text))
    if not 0 < microseconds < _MAX_USEC:
        return 'must be more than 0 and less than 292,000 years (systemd ignores a timer value out of that range)'
    return None


_TIMESPAN_SECONDS = (('usec', 1e-6), ('us', 1e-6), ('\u00b5s', 1e-6), ('msec', 1e-3), ('ms', 1e-3),
                     ('seconds', 1), ('second', 1), ('sec', 1), ('s', 1), ('minutes', 60), ('minute', 60),
                     ('min', 60), ('months', 2629800), ('month', 2629800), ('M', 2629800), ('m', 60),
                     ('hours', 3600), ('hour', 3600), ('hr', 3600), ('h', 3600), ('days', 86400), ('day', 86400),
                     ('d', 86400), ('weeks', 604800), ('week', 604800), ('w', 604800), ('years', 31557600),
                     ('year', 31557600), ('y', 31557600))
_TIMESPAN_TERM = re.compile(r'(\d+(?:\.\d+)?)\s*(%s)?\s*' % '|'.join(unit for unit, _seconds in _TIMESPAN_SECONDS))


def timespan_seconds(text):
    """Seconds in a systemd time span (systemd.time(7): a bare number is seconds; a month is 30.44 days, a year
    365.25), or raises ValueError; what the sampler's timer interval is, as a number."""
    if systemd_timespan(str(text)):
        raise ValueError('not a systemd time span: %r' % (text,))
    factors = dict(_TIMESPAN_SECONDS)
    return sum(float(number) * factors[unit or 's'] for number, unit in _TIMESPAN_TERM.findall(str(text).strip()))


def unit_name(text):
    if not _UNIT_NAME.fullmatch(text):
        return 'must be a systemd unit name such as kubelet.service (letters, digits and :-_.\\@ only)'
    return None


def prometheus_label(text):
    """A label of kube-state-metrics' kube_node_labels (``label_karpenter_sh_nodepool``) or the Kubernetes label it
    stands for (``karpenter.sh/nodepool``: a DNS prefix, '/', a name), as _prometheus_class.kube_state_label reads it."""
    if not re.match(r'^[A-Za-z0-9_]([A-Za-z0-9_./-]{0,315})$', text) or text.endswith('/'):
        return ('must be a label of kube_node_labels such as label_karpenter_sh_nodepool, or a Kubernetes node label '
                'such as node.kubernetes.io/instance-type')
    return None


RULES = {
    'node_path': node_path,
    'unit_path': unit_path,
    'unit_file_path': unit_file_path,
    'http_url': http_url,
    'prometheus_url': prometheus_url,
    'header_value': header_value,
    'prometheus_label': prometheus_label,
    'systemd_percent': systemd_percent,
    'systemd_bytes': systemd_bytes,
    'systemd_timespan': systemd_timespan,
    'unit_name': unit_name,
}


# PromQL templates (reservations_prometheus_query: one node's non-pod memory in bytes, the node as $node).
# Default query, for kube-prometheus-stack's metric and label names (charts/kube-prometheus-stack in
# prometheus-community/helm-charts, read 2026-08: values.yaml, templates/prometheus/rules-1.14/node.rules.yaml and
# k8s.rules.container_memory_working_set_bytes.yaml):
#
# * node_exporter's series carry no node name: its ServiceMonitor has no relabeling to one (``relabelings: []``, a
#   ``nodename`` one only as a commented example) and its targets are pods, so they carry ``namespace`` and ``pod``.
#   kube-prometheus' own rules name the node through the recording rule ``node_namespace_pod:kube_pod_info:`` (from
#   kube-state-metrics' ``kube_pod_info``), joined ``on (namespace, pod)``; so does this query.
# * cAdvisor's series (``job="kubelet", metrics_path="/metrics/cadvisor"``) carry ``node`` (the kubelet Service's
#   endpoints are Nodes). But the chart's ``cAdvisorMetricRelabelings`` drop every series with an ``id`` and no
#   ``pod`` ("Drop cgroup metrics with no pod", ``[id, pod]`` ``.+;``): the kubepods cgroup's own series
#   (``id="/kubepods.slice"``, systemd driver, or ``"/kubepods"``, cgroupfs) is not stored. The query sums the
#   containers' working sets instead (``image!=""``, as the chart's own container rules select them), which leaves out
#   what is charged to the pod-level cgroups themselves: that small rest counts as non-pod, so the figure errs towards
#   reserving more, never less. Where the kubepods series is kept, ``PREFERRED_KUBEPODS_QUERY`` is the exact one.
_NODE_EXPORTER = ('%s{job="node-exporter"} * on (namespace, pod) group_left (node) '
                  'node_namespace_pod:kube_pod_info:{node="$node"}')
DEFAULT_QUERY = (
    '(' + _NODE_EXPORTER % 'node_memory_MemTotal_bytes' + ')'
    ' - on (node) (' + _NODE_EXPORTER % 'node_memory_MemAvailable_bytes' + ')'
    ' - on (node) sum by (node) (container_memory_working_set_bytes{job="kubelet", '
    'metrics_path="/metrics/cadvisor", node="$node", image!=""})')
# Where the kubepods cgroup's own series is kept (no "drop cgroup metrics with no pod" relabeling): its working set,
# the PoC's figure exactly. id="/kubepods.slice" with the systemd cgroup driver, "/kubepods" with cgroupfs.
PREFERRED_KUBEPODS_QUERY = (
    '(' + _NODE_EXPORTER % 'node_memory_MemTotal_bytes' + ')'
    ' - on (node) (' + _NODE_EXPORTER % 'node_memory_MemAvailable_bytes' + ')'
    ' - on (node) max by (node) (container_memory_working_set_bytes{job="kubelet", '
    'metrics_path="/metrics/cadvisor", node="$node", id=~"/kubepods(.slice)?"})')
# The collection's own sampler's figure (_sampler/_metrics: nodealloc_memory_non_pod_bytes), written to
# node_exporter's textfile directory: the very number the node's history file holds. In kube-prometheus-stack the
# textfile's series carry node_exporter's labels, so the node is named the same way.
NODEALLOC_QUERY = 'nodealloc_memory_non_pod_bytes{job="node-exporter"} * on (namespace, pod) group_left (node) ' \
                  'node_namespace_pod:kube_pod_info:{node="$node"}'
# The pods on one node (reservations_prometheus_pods_query, issue 45), for kube-prometheus-stack: the kubelet's own
# gauge ``kubelet_running_pods`` (kubernetes pkg/kubelet/metrics/metrics.go: subsystem "kubelet", ``RunningPodsKey``
# "running_pods", ALPHA, "Number of pods that have a running pod sandbox", no label of its own; named
# kubelet_running_pod_count before Kubernetes 1.19). The chart's kubelet ServiceMonitor scrapes it at /metrics
# (job="kubelet" from its jobLabel k8s-app, ``metrics_path`` from its default relabelings), and the Prometheus Operator
# labels a target whose endpoint is a Node with ``node`` (pkg/prometheus/promcfg.go, "Node;(.*)" to target_label node),
# as cAdvisor's series above. A pod with a running sandbox is what holds a pod cgroup under kubepods, the count the
# node's own history records (_node/_overcommit).
DEFAULT_PODS_QUERY = 'kubelet_running_pods{job="kubelet", metrics_path="/metrics", node="$node"}'

NODE_PLACEHOLDER = '$node'
_IDENTIFIER = re.compile(r'[A-Za-z_:][A-Za-z0-9_:]*')
_PAIRS = {')': '(', ']': '[', '}': '{'}


def _strings_and_code(template):
    """(code outside string literals, [string literals]) of a PromQL text, or raises ValueError."""
    code, strings, index = [], [], 0
    while index < len(template):
        char = template[index]
        if char in '"\'`':
            end = index + 1
            while end < len(template) and template[end] != char:
                end += 2 if template[end] == '\\' and char != '`' else 1
            if end >= len(template):
                raise ValueError('a %s string is not closed' % char)
            strings.append(template[index + 1:end])
            code.append(' ')
            index = end + 1
            continue
        code.append(char)
        index += 1
    return ''.join(code), strings


def query_problem(template):
    """Why ``template`` is not a PromQL query of one node's non-pod memory with ``$node`` in a label value, or None.

    Not a PromQL parser: it catches what a typo or a wrong variable gives (a URL, an unclosed bracket or string, no
    metric name, ``$node`` missing or outside quotes, where the substitution would not name a node).
    """
    text = (template or '').strip()
    if not text:
        return 'must be a PromQL query'
    if any(ord(c) < 32 and c not in '\t\n\r' for c in text):
        return 'must not contain control characters'
    if re.match(r'^[a-z][a-z0-9+.-]*://', text, re.IGNORECASE):
        return 'must be a PromQL query, not a URL (the server goes in reservations_prometheus_url)'
    try:
        code, strings = _strings_and_code(text)
    except ValueError as exc:
        return 'is not PromQL: %s' % exc
    stack = []
    for char in code:
        if char in '([{':
            stack.append(char)
        elif char in ')]}':
            if not stack or stack.pop() != _PAIRS[char]:
                return 'is not PromQL: %r without its opening bracket' % char
    if stack:
        return 'is not PromQL: %r is not closed' % stack[-1]
    if not _IDENTIFIER.search(code.replace(NODE_PLACEHOLDER, ' ')):
        return 'is not PromQL: it names no metric'
    if not any(NODE_PLACEHOLDER in literal for literal in strings):
        if NODE_PLACEHOLDER in code:
            return 'must have $node inside a quoted label value, such as node="$node"'
        return 'must name the node as $node in a label value, such as node="$node"'
    if re.search(r'[;]|\bhttps?:', code):
        return 'is not PromQL: it has %r outside a string' % re.search(r'[;]|\bhttps?:', code).group(0)
    return None
