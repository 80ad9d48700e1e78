# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import ipaddress
import time
from urllib.parse import urlsplit

from ansible.module_utils.urls import open_url
from ansible.plugins.action import ActionBase

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_forms, _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _duration
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import (_prometheus_class, _prometheus_history,
                                                                                _prometheus_http)

_ROLE = _option_specs.OPTIONS


class ActionModule(ActionBase):
    """Read one node's history of non-pod memory from Prometheus, on the controller (issue 36).

    The controller reaches Prometheus where the nodes may not (AWX, an operator's workstation); the node is not
    contacted. Returns ``history`` (_prometheus_history.fetch: samples, span, problems, and a ``reason`` when the
    history cannot be used) for node_reservation_facts' ``prometheus_history``. Never fails on what Prometheus
    answers or on not reaching it: each such case is the ``reason``, and the node rests on its own history.
    """

    TRANSFERS_FILES = False
    _requires_connection = False

    _SPEC = {
        'url': {'type': 'str', 'required': True},
        'query': {'type': 'str', 'default': _ROLE['prometheus_query']['default']},
        'pods_query': {'type': 'str', 'default': _ROLE['prometheus_pods_query']['default']},
        'mode': {'type': 'str', 'default': 'node', 'choices': ['node', 'classes']},
        'node': {'type': 'str'},
        # mode classes: host to how Prometheus names it ('' : the host's name), and the label naming the class.
        'nodes': {'type': 'dict', 'default': {}},
        'class_label': {'type': 'str', 'default': _ROLE['prometheus_class_label']['default']},
        'window': {'type': 'str', 'default': _ROLE['history_window']['default']},
        'step': {'type': 'str', 'default': _ROLE['sampler_interval']['default']},
        'bearer_token': {'type': 'str', 'default': '', 'no_log': True},
        'username': {'type': 'str', 'default': ''},
        'password': {'type': 'str', 'default': '', 'no_log': True},
        'ca_file': {'type': 'str', 'default': ''},
        'validate_certs': {'type': 'bool', 'default': _ROLE['prometheus_validate_certs']['default']},
        'timeout': {'type': 'int', 'default': _ROLE['prometheus_timeout_seconds']['default']},
        'max_answer_bytes': {'type': 'raw', 'default': _ROLE['prometheus_max_answer_bytes']['default']},
    }
    # Checked as the role's option check does (_option_forms), the values never shown.
    _FORMS = {'url': 'prometheus_url', 'bearer_token': 'header_value', 'username': 'header_value',
              'password': 'header_value'}

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp  # tmp no longer has any effect
        dummy, args = self.validate_argument_spec(argument_spec=self._SPEC,
                                                  required_if=[('mode', 'node', ('node',))])
        for name, form in sorted(self._FORMS.items()):
            problem = _option_forms.RULES[form](args[name]) if args[name] else None
            if problem:
                return dict(result, failed=True, msg='%s %s' % (name, problem))
        try:
            max_answer_bytes = _option_specs.quantity_bytes(args['max_answer_bytes'])
        except (TypeError, ValueError):
            max_answer_bytes = 0
        if max_answer_bytes < 1:
            return dict(result, failed=True, msg='max_answer_bytes must be bytes (16777216) or a quantity (16Mi), at '
                                                 'least 1 byte')
        problem = _option_forms.query_problem(args['query'])
        if problem:
            return dict(result, failed=True, msg='query %s' % problem)
        problem = _option_forms.query_problem(args['pods_query']) if args['pods_query'] else None
        if problem:
            return dict(result, failed=True, msg='pods_query %s' % problem)
        problem = _option_forms.prometheus_label(args['class_label']) if args['class_label'] else None
        if problem:
            return dict(result, failed=True, msg='class_label %s' % problem)
        try:
            window = _duration.parse_window(args['window'])
            step = int(_option_forms.timespan_seconds(args['step']))
        except ValueError as exc:
            return dict(result, failed=True, msg=str(exc))
        settings = {'url': args['url'], 'query': args['query'], 'pods_query': args['pods_query'] or '',
                    'node': args['node'] or '', 'window_seconds': window, 'step_seconds': max(1, step), 'timeout_seconds': args['timeout'],
                    'validate_certs': args['validate_certs'], 'ca_file': args['ca_file'],
                    'bearer_token': args['bearer_token'], 'username': args['username'], 'password': args['password'],
                    'max_answer_bytes': max_answer_bytes}
        warning = plain_http_credentials(settings)
        if warning:
            result['warnings'] = [warning]
        try:
            if args['mode'] == 'classes':
                read = self._classes(args, settings)
                # A node left out of class history (a class label or a name that is no Kubernetes name) is named
                # where the operator sees it: warnings are shown though the task is no_log (it carries credentials).
                result['warnings'] = result.get('warnings', []) + ['left out of class history: %s' % refusal
                                                                   for refusal in read['refused']]
                return dict(result, changed=False, **read)
            history = _prometheus_history.fetch(open_url, settings, time.time())
        except Exception as exc:  # pylint: disable=broad-except  # a defect of ours is still a reason, not a failed node
            why = _prometheus_http.redact('reading Prometheus failed unexpectedly (%s: %s); please report it'
                                          % (type(exc).__name__, exc), settings)
            if args['mode'] == 'classes':
                return dict(result, changed=False, classes={}, host_classes={}, label='', reason=why, refused=[])
            history = {'source': 'prometheus', 'url': _prometheus_http.without_user_info(settings['url']),
                       'node': settings['node'], 'query': None, 'samples': [], 'span_seconds': 0, 'problems': [],
                       'reason': why, 'step_seconds': settings['step_seconds'],
                       'window_seconds': settings['window_seconds']}
        result.update(changed=False, history=history)
        return result

    @staticmethod
    def _classes(args, settings):
        """{classes, host_classes, label, reason, refused}: each class's history (_prometheus_class.fetch_classes),
        the class of each host Prometheus knows, and why nodes were left out of every class."""
        names = {host: (name or host) for host, name in args['nodes'].items()}
        read = _prometheus_class.fetch_classes(open_url, dict(settings, class_label=args['class_label']), time.time(),
                                               sorted(set(names.values())))
        host_classes = {host: read['node_classes'][name] for host, name in names.items()
                        if name in read['node_classes']}
        return {'classes': read['classes'], 'host_classes': host_classes, 'label': read['label'],
                'reason': read['reason'], 'refused': read['refused']}


def plain_http_credentials(settings):
    """The warning for credentials sent in the clear to a host other than the loopback, or None."""
    if not (settings['bearer_token'] or settings['password']):
        return None
    parts = urlsplit(settings['url'])
    if parts.scheme != 'http':
        return None
    host = parts.hostname or ''
    try:
        loopback = host == 'localhost' or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return ('the Prometheus URL (reservations_prometheus_url) is plain http:// to %s: the bearer token or password '
            'crosses the network unencrypted; use https://' % _prometheus_http.without_user_info(host))
