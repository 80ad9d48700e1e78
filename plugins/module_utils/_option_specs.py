# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The one home of every option's type, default, range and unit, and of the kubelet's own defaults.

The modules' argument specs (_module_glue), the recommendation's and the decision's defaults are built
from ``OPTIONS``; the doc fragments, the modules' DOCUMENTATION and the reservations role's
``defaults/main.yml`` and ``meta/argument_specs.yml`` are compared with it by
tests/unit/plugins/module_utils/test__option_specs.py, which fails when they drift.

Adding an option is one entry: ``modules`` names the modules that take it (the role takes every option as
``reservations_<name>``; an entry with ``modules=()`` is the role's alone), ``rule`` how ``check`` validates it.
"""

from __future__ import annotations

import difflib
import math
import re

# A leaf on purpose: the controller-side option check (the role's check_options.yml, the option_problems filter) and
# every module load this file, so it imports only the kubelet's own model and the state paths, never node code
# (tests/unit/plugins/module_utils/test__option_specs.py lists what importing it loads).
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_forms, _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import (
    _defaults, _duration, _quantity, _vendor_formulas)

FACTS = 'node_reservation_facts'
CONFIG = 'kubelet_config'
ROLE_PREFIX = 'reservations_'


VENDOR_FORMULAS = list(_vendor_formulas.FORMULAS)


def _option(type_, default=None, description='', unit=None, modules=(FACTS,), rule=None, choices=None,
            elements=None, required=False, removed_in_version=None, secret=False):
    option = {'type': type_, 'default': default, 'description': description, 'unit': unit, 'modules': modules,
              'rule': rule, 'choices': choices, 'elements': elements, 'required': required}
    if secret:
        # Never printed: a problem with it names the option and the rule, not the value (check()).
        option['secret'] = True
    if removed_in_version:
        # AnsibleModule warns of the deprecation whenever the option is set.
        option.update(removed_in_version=removed_in_version, removed_from_collection='nodealloc.kubelet')
    return option


# rule: ('range', low, low_inclusive, high, high_inclusive) with None for no bound, 'duration' (Go duration
# or whole days, not negative), 'quantity' (a Kubernetes quantity, not negative), 'quantity_bytes' (a memory amount:
# plain bytes or a Kubernetes quantity, not negative; with_defaults turns it into bytes), 'nonempty', 'promql_template'
# (_option_forms.query_problem: PromQL with $node in a label value), 'promql_template_or_empty' (the same, or empty).
AT_LEAST_0 = ('range', 0, True, None, False)
AT_LEAST_1 = ('range', 1, True, None, False)
KUBELET = (FACTS,)
BOTH = (FACTS, CONFIG)

OPTIONS = {
    # Where the kubelet is (node_reservation_facts; the cgroup ones also kubelet_config).
    'kubelet_config_path': _option('path', _defaults.CONFIG_PATH, 'KubeletConfiguration file read when no '
                                   'running kubelet names one', modules=KUBELET, rule='node_path'),
    'kubelet_config_dir': _option('path', None, "the kubelet's drop-in directory when no running kubelet names one",
                                  rule='node_path'),
    'kubelet_process_names': _option('list', ['kubelet'], 'program names of the kubelet', elements='str'),
    'runtime_process_names': _option('list', ['containerd', 'crio', 'dockerd', 'cri-dockerd'],
                                     'program names of the container runtime', elements='str'),
    'kubepods_cgroup': _option('str', None, 'the node-allocatable cgroup', modules=BOTH),
    'cgroup_root': _option('path', None, 'read cgroups from this directory', modules=BOTH, rule='node_path'),
    # Measuring.
    'sample_seconds': _option('float', 5, 'CPU sampling time', 'seconds', rule=AT_LEAST_0),
    # Policy.
    'memory_headroom_rule': _option('str', 'jumps', 'memory headroom in bytes from the node\'s own jumps above the '
                                    'preceding peak (jumps), or a share of the window\'s peak (percent)',
                                    choices=['jumps', 'percent']),
    'memory_headroom_percent': _option('float', 50.0, 'memory headroom: this share of the history window\'s peak of '
                                       'non-pod memory (the percent rule, and a young node\'s under the jumps rule)',
                                       'percent', rule=AT_LEAST_0),
    'memory_headroom_min_bytes': _option('raw', 768 * 1024 * 1024, 'least memory headroom', 'bytes',
                                         rule='quantity_bytes'),
    'memory_headroom_max_bytes': _option('raw', 2 * 1024 * 1024 * 1024, 'most memory headroom the jumps rule adds '
                                         '(never below memory_headroom_min_bytes)', 'bytes', rule='quantity_bytes'),
    'cpu_headroom_percent': _option('float', 10.0, 'CPU headroom over measured non-pod use', 'percent',
                                    rule=AT_LEAST_0),
    'cpu_headroom_min_millicores': _option('int', 50, 'least CPU headroom', 'millicores', rule=AT_LEAST_0),
    'change_threshold_percent': _option('float', 10.0, 'least relative change worth a restart', 'percent',
                                        rule=AT_LEAST_0),
    'change_threshold_min_bytes': _option('raw', 64 * 1024 * 1024, 'least memory change worth a restart', 'bytes',
                                          rule='quantity_bytes'),
    'change_threshold_min_millicores': _option('int', 50, 'least CPU change worth a restart', 'millicores',
                                               rule=AT_LEAST_0),
    'history': _option('bool', True, 'keep and use a history of readings'),
    # In the sampler's ExecStart=, and its directory holds the files the role and the sampler keep (_node_plan.state_paths).
    'history_path': _option('path', _state_dir.HISTORY_PATH, 'the history file on the node', rule='unit_file_path'),
    'history_window': _option('str', '7d', 'how far back the recommendation looks', 'duration', rule='duration'),
    'percentile': _option('float', 100.0, 'percentile of non-pod use over the window', 'percent',
                          rule=('range', 0, False, 100, True)),
    'stabilization_window': _option('str', '24h', 'how long a lower value must hold before a decrease',
                                    'duration', rule='duration'),
    'allow_decrease': _option('bool', True, 'decide decreases; false keeps a resource that would decrease (a run '
                              'started to raise the reservation)'),
    # Issue 47 item 2: off by default, so an upgrade restarts no kubelet for a resource nobody asked to reserve.
    'reserve_ephemeral_storage': _option('bool', False, 'write the recommended ephemeral-storage into the reservation '
                                         '(false: recommend and show it, write today\'s maps back as they are)'),
    # Issue 47 item 1: off by default for the same reason.
    'reserve_pids': _option('bool', False, 'write the recommended pid into the reservation (false: recommend and '
                            'show it, write today\'s maps back as they are)'),
    'min_reserved': _option('str', '256Mi', 'least memory reserved in all', 'quantity', rule='quantity'),
    'max_reserved_fraction': _option('float', 0.5, 'most of the memory the reservations may take', 'fraction',
                                     rule=('range', 0, False, 1, False)),
    'policy': _option('str', 'measured', 'measured, or a vendor formula', choices=['measured'] + VENDOR_FORMULAS),
    'floor_policy': _option('str', 'none', 'a vendor formula as the floor', choices=['none'] + VENDOR_FORMULAS),
    'max_pods': _option('int', None, 'max pods for the AKS and EKS formulas', 'pods', rule=AT_LEAST_1),
    'openshift_sizing_version': _option('int', _vendor_formulas.OPENSHIFT_DEFAULT_SIZING_VERSION,
                                        "OpenShift's node sizing version (/etc/node-sizing-version.json)",
                                        choices=list(_vendor_formulas.OPENSHIFT_SIZING_VERSIONS)),
    'reaction_time': _option('str', '24h', 'how often the reservations are applied; until the history spans one, '
                             'the cold-start prior is the floor', 'duration', rule='duration'),
    # Deprecated (issue 29): the climb rule it scaled is gone; accepted and ignored, with a warning, until 1.0.0.
    'jump_headroom_factor': _option('float', None, 'ignored (deprecated): the headroom is memory_headroom_percent of P',
                                    'factor', rule=AT_LEAST_1, removed_in_version='1.0.0'),
    'cold_start_prior': _option('str', 'gke', 'until the history spans one reaction time, reserve at '
                                'least this vendor formula',
                                choices=['none'] + VENDOR_FORMULAS),
    'class_peers': _option('list', None, "what the other nodes of the run told their class (each one's "
                           'class_record): peaks to pool, reservations for a cold start', elements='dict'),
    # The inventory's nodealloc_node_class (a Karpenter NodePool, a node group...): the one class name pooling, the
    # report and the templates group a node by; None or empty: its size class (_headroom.node_class).
    'node_class': _option('str', None, "the node's class (the inventory's nodealloc_node_class): pooling, the report "
                          'and the templates group by it; unset: memory in whole GiB and CPU count'),
    'pool_class': _option('bool', True, 'pool peaks, and take the cold-start prior, over the nodes of the same class '
                          'measured in the same run', modules=()),
    'cpu_guarantee': _option('str', 'reserve', "reserve CPU until system.slice's guaranteed share covers its need, "
                             'or only report it', choices=['reserve', 'report']),
    # Issue 30 item 4: the pods bound to the node, each {pod, millicores, memory_bytes} (the pod_requests filter
    # reduces what kubernetes.core.k8s_info read); None: the role could not reach the API server, the check is skipped.
    'pod_requests': _option('list', None, "the requests of the pods bound to the node (the role reads them from the API "
                            'server); their sum must fit the allocatable a change gives', elements='dict'),
    # Recording and output.
    # Unset: recorded where the role installs no sampler (_node_plan.records); the sampler records every minute.
    'record': _option('bool', None, 'append this reading to the history (unset: where install_sampler is false)'),
    'textfile_path': _option('path', None, 'Prometheus textfile to write', rule='node_path'),
    'basis': _option('dict', None, "an earlier call's basis: decide again from it, measuring nothing"),
    # kubelet_config.
    'path': _option('path', None, 'the main KubeletConfiguration file', modules=(CONFIG,), required=True,
                    rule='node_path'),
    'drop_in_dir': _option('path', None, "the kubelet's --config-dir", modules=BOTH, rule='node_path'),
    'drop_in_name': _option('str', _defaults.DROP_IN_NAME, 'our drop-in file name', modules=(CONFIG,),
                            rule='drop_in_name'),
    'state': _option('str', 'present', 'present or absent', modules=(CONFIG,), choices=['present', 'absent']),
    'kube_reserved': _option('dict', None, 'kubeReserved to set', modules=(CONFIG,)),
    'system_reserved': _option('dict', None, 'systemReserved to set', modules=(CONFIG,)),
    'eviction_hard': _option('dict', None, 'evictionHard to set', modules=(CONFIG,)),
    'eviction_soft': _option('dict', None, 'evictionSoft to set', modules=(CONFIG,)),
    'eviction_soft_grace_period': _option('dict', None, 'evictionSoftGracePeriod to set', modules=(CONFIG,)),
    'eviction_minimum_reclaim': _option('dict', None, 'evictionMinimumReclaim to set', modules=(CONFIG,)),
    'enforce_node_allocatable': _option('list', None, 'enforceNodeAllocatable to set', modules=(CONFIG,),
                                        elements='str'),
    'kube_reserved_cgroup': _option('str', None, 'kubeReservedCgroup to set', modules=(CONFIG,)),
    'system_reserved_cgroup': _option('str', None, 'systemReservedCgroup to set', modules=(CONFIG,)),
    'backup': _option('bool', False, 'keep a backup before changing', modules=(CONFIG,)),
    'validate_against_node': _option('bool', True, "check against this node's capacity", modules=(CONFIG,)),
    'kubepods_margin': _option('str', '256Mi', 'least room left above what pods use now', 'quantity',
                               modules=(CONFIG,), rule='quantity'),
    'lock_timeout': _option('float', 30, 'wait for the directory lock', 'seconds', modules=(CONFIG,),
                            rule=AT_LEAST_0),
    # The reservations role's own.
    # The role's, and node_reservation_facts' for its plan (_node_plan).
    'kubelet_unit': _option('str', None, "the kubelet's systemd unit", rule='unit_name'),
    'use_drop_in': _option('raw', 'auto', 'write a drop-in (auto: wherever the kubelet runs with --config-dir)',
                           choices=['auto', True, False, 'true', 'false']),
    'enable_config_dir': _option('bool', False, "give a kubeadm node's kubelet --config-dir the supported way"),
    # Written into KUBELET_EXTRA_ARGS="... --config-dir=PATH" in kubeadm's environment file.
    'config_dir_path': _option('path', _defaults.KUBEADM_CONFIG_DIR, 'the drop-in directory enable_config_dir '
                               'gives the kubelet', rule='unit_path'),
    'healthz_url': _option('str', _defaults.HEALTHZ_URL, "the kubelet's health endpoint", modules=(),
                           rule='http_url'),
    # The three timings the on-node step waits for: node_reservation_facts' plan sizes the step's budget from them.
    'health_timeout_seconds': _option('int', 120, 'time a restarted kubelet has to become healthy', 'seconds',
                                      rule=AT_LEAST_1),
    'health_poll_seconds': _option('int', 2, 'time between health checks', 'seconds', modules=(), rule=AT_LEAST_1),
    'health_soak_seconds': _option('int', 30, 'how long a healthy kubelet must stay up (same PID, no restart, /healthz '
                                   'answering) before the node counts as done', 'seconds', rule=AT_LEAST_0),
    'node_lock_timeout_seconds': _option('int', 300, "how long a node's apply step waits for another run's step",
                                         'seconds', rule=AT_LEAST_0),
    'restart_throttle': _option('int', 0, 'most kubelet restarts at once in a batch (0: no limit)', 'restarts',
                                modules=(), rule=AT_LEAST_0),
    'pause_seconds': _option('int', 0, 'wait after each batch', 'seconds', modules=(), rule=AT_LEAST_0),
    'install_sampler': _option('bool', True, 'install the sampler timer'),
    'sampler_textfile_path': _option('str', '/var/lib/node_exporter/textfile_collector/nodealloc.prom',
                                     "the sampler's Prometheus textfile", modules=(), rule='unit_file_path'),
    'sampler_memory_max': _option('str', '64M', "the sampler service's MemoryMax=", modules=(), rule='systemd_bytes'),
    'sampler_cpu_quota': _option('str', '20%', "the sampler service's CPUQuota=", modules=(), rule='systemd_percent'),
    'sampler_nice': _option('int', 15, "the sampler service's Nice=", modules=(), rule=('range', -20, True, 19, True)),
    'sampler_dir': _option('path', '/usr/local/lib/nodealloc', 'where the sampler goes', modules=(), rule='unit_path'),
    'sampler_interval': _option('str', '1min', "the sampler timer's interval", 'systemd time span', modules=(),
                                rule='systemd_timespan'),
    'sampler_sample_seconds': _option('int', 10, 'CPU sampling time of each sampler run', 'seconds', modules=(),
                                      rule=AT_LEAST_0),
    'kubeconfig': _option('str', None, 'a kubeconfig on the controller for the API server check', modules=()),
    'node_name': _option('str', None, "the Node's name in the API server", modules=()),
    # Computed in the role's defaults (a kubeconfig, or AWX's K8S_AUTH_* credential, is present): no fixed default.
    'api_check': _option('bool', None, 'also wait for the Node in the API server after a change', modules=()),
    # Issue 36: the history from Prometheus, read on the controller (the action plugin prometheus_history) and handed
    # to node_reservation_facts as prometheus_history.
    'prometheus_url': _option('str', '', 'the Prometheus server to read history from (empty: none)', modules=(),
                              rule='prometheus_url'),
    'prometheus_query': _option('str', _option_forms.DEFAULT_QUERY, "a PromQL query of one node's non-pod "
                                'memory in bytes, the node named by $node', modules=(), rule='promql_template'),
    # Issue 45: the node's pods at each step, merged into the history lines the Prometheus history gives (``pods``).
    'prometheus_pods_query': _option('str', _option_forms.DEFAULT_PODS_QUERY, "a PromQL query of one node's number "
                                     'of pods, the node named by $node (empty: pods not read)', modules=(),
                                     rule='promql_template_or_empty'),
    'prometheus_node': _option('str', '', 'how Prometheus names this node (empty: the inventory hostname)',
                               modules=()),
    'prometheus_bearer_token': _option('str', '', 'a bearer token for Prometheus', modules=(), rule='header_value',
                                       secret=True),
    'prometheus_username': _option('str', '', 'a user name for basic authentication to Prometheus', modules=(),
                                   rule='header_value'),
    'prometheus_password': _option('str', '', 'a password for basic authentication to Prometheus', modules=(),
                                   rule='header_value', secret=True),
    'prometheus_ca_file': _option('str', '', "a CA file on the controller for Prometheus' certificate", modules=()),
    'prometheus_validate_certs': _option('bool', True, "check Prometheus' TLS certificate", modules=()),
    'prometheus_timeout_seconds': _option('int', 30, 'time each Prometheus request has to answer: connecting, the '
                                          'headers and the whole body', 'seconds', modules=(), rule=AT_LEAST_1),
    # Issue 44: an answer is read up to this size, never more (_prometheus_http.DEFAULT_MAX_ANSWER_BYTES, 16 MiB).
    'prometheus_max_answer_bytes': _option('raw', 16777216, 'the largest Prometheus answer read', 'bytes', modules=(),
                                           rule='quantity_bytes'),
    'prometheus_history': _option('dict', None, 'the history the controller read from Prometheus (the role reads it '
                                  'with the prometheus_history action)'),
    'prometheus_class_label': _option('str', '', "the node label naming a node's class in Prometheus (kube_node_labels; "
                                      'empty: the size class)', modules=(), rule='prometheus_label'),
    'class_history': _option('dict', None, "the history of the node's class the controller read from Prometheus, for "
                             'its node templates (the role reads it with the prometheus_history action, mode classes)'),
}

# Options only the modules take: the role works them out itself (class_peers, record, the kubelet_config ones) or
# leaves them at the module's default. Every other option is the role's variable reservations_<name>
# (meta/argument_specs.yml; tests/unit/plugins/module_utils/test__option_specs.py keeps the two in step).
# The memory options that take bytes or a quantity: with_defaults gives them to the code in bytes.
QUANTITY_BYTES_OPTIONS = frozenset(name for name, option in OPTIONS.items() if option['rule'] == 'quantity_bytes')

MODULE_ONLY = frozenset((
    'kubelet_config_dir', 'kubelet_process_names', 'runtime_process_names', 'kubepods_cgroup', 'cgroup_root', 'history',
    'max_pods', 'class_peers', 'record', 'textfile_path', 'path', 'drop_in_name',
    'state', 'kube_reserved', 'system_reserved', 'eviction_hard', 'eviction_soft', 'eviction_soft_grace_period',
    'eviction_minimum_reclaim', 'enforce_node_allocatable', 'kube_reserved_cgroup', 'system_reserved_cgroup', 'backup',
    'validate_against_node', 'lock_timeout', 'basis', 'pod_requests', 'prometheus_history', 'class_history',
    'node_class'))


# The on-node step (kubelet_reservations_apply). It takes the kubelet_config options named in STEP_SHARED as they are
# in OPTIONS, and its own below: two of its names mean something else there (its state is applied/restored, its
# enable_config_dir the directory to enable), so they cannot be OPTIONS entries. Its health timings default to the
# role's (one home: health_timeout_seconds & co. above).
STEP = 'kubelet_reservations_apply'
STEP_SHARED = ('path', 'drop_in_dir', 'drop_in_name', 'kube_reserved', 'system_reserved', 'kubepods_margin',
               'kubepods_cgroup', 'cgroup_root', 'healthz_url')
STEP_OPTIONS = {
    'state': _option('str', 'applied', 'write and verify, put a backup back, or only write the status of a keep',
                     modules=(STEP,), choices=['applied', 'restored', 'kept']),
    'unit': _option('str', 'kubelet.service', "the kubelet's systemd unit", modules=(STEP,)),
    'kubepods_limit_file': _option('path', None, "the kubepods cgroup's memory limit file", modules=(STEP,)),
    'health_timeout': _option('float', OPTIONS['health_timeout_seconds']['default'], 'wait for the first healthy answer',
                              'seconds', modules=(STEP,), rule=AT_LEAST_0),
    'health_poll': _option('float', OPTIONS['health_poll_seconds']['default'], 'between health checks', 'seconds',
                           modules=(STEP,)),
    'soak_seconds': _option('float', OPTIONS['health_soak_seconds']['default'], 'stay healthy this long', 'seconds',
                            modules=(STEP,)),
    'node_lock_timeout': _option('float', OPTIONS['node_lock_timeout_seconds']['default'], 'wait for the node lock',
                                 'seconds', modules=(STEP,)),
    'config_lock_timeout': _option('float', OPTIONS['lock_timeout']['default'], "wait for the config directory's lock",
                                   'seconds', modules=(STEP,)),
    'state_dir': _option('path', _state_dir.NODE_LOCK_DIR, 'node lock, holder and journal', modules=(STEP,)),
    'controller': _option('str', None, 'how a waiting step names this run', modules=(STEP,)),
    # Issue 48: the step detaches itself (_step_detach), one pipelined run per node where async took six operations.
    'detach': _option('int', 0, 'run detached from the SSH session, for at most this long (0: in the session)',
                      'seconds', modules=(STEP,), rule=AT_LEAST_0),
    'backup_file': _option('path', None, 'the backup a restore puts back', modules=(STEP,)),
    'only_if_sha256': _option('str', None, 'restore only over this content', modules=(STEP,)),
    'created': _option('bool', False, 'the step undone created the file', modules=(STEP,)),
    'apply_after_wait': _option('bool', False, 'write even after waiting for another step', modules=(STEP,)),
    'measured_reserved': _option('dict', None, 'the reservations in force when measured', modules=(STEP,)),
    'enable_config_dir': _option('path', None, 'give the kubelet this --config-dir in the step', modules=(STEP,)),
    'extra_args_file': _option('path', None, "kubeadm's extra-args environment file", modules=(STEP,)),
    'status': _option('dict', None, 'status files to write after the outcome', modules=(STEP,)),
    # Issue 47: set by the plan only where the static memory manager would otherwise refuse the new reservation
    # (_node_plan.apply_options); written in the same file, in the same atomic write, as the reservation.
    'reserved_memory': _option('list', None, 'reservedMemory to set with the reservation', modules=(STEP,),
                               elements='dict'),
}


# The sampler's settings: one table for the script's flags (roles/reservations/files/nodealloc-sampler.py), its options
# file (sampler.json, _systemd_units), sampler_code's ``settings`` and the run's defaults (_sample_once.DEFAULTS).
# Each default is the role's option it stands for, or a state path (_state_dir). ``key``: its name in sampler.json
# and the script's flag (``--`` + key with '-' for '_'); None: the run's alone (given by no flag). ``settings``:
# sampler_code takes it in ``settings`` (required there unless it has choices); ``run``: _sample_once.run takes it.
SAMPLER = 'sampler'


def _sampler_setting(type_, default, key=None, description=None, settings=True, run=True, choices=None):
    return {'type': type_, 'default': default, 'key': key, 'description': description, 'settings': settings,
            'run': run, 'choices': choices}


SAMPLER_OPTIONS = {
    'history_path': _sampler_setting('path', OPTIONS['history_path']['default'], 'history'),
    'state_path': _sampler_setting('path', _state_dir.SAMPLER_STATE_PATH, 'state'),
    'textfile_path': _sampler_setting('str', OPTIONS['sampler_textfile_path']['default'], 'textfile',
                                      "'' to write no metrics"),
    'decision_path': _sampler_setting('path', _state_dir.DECISION_PATH, 'decision'),
    'percentile': _sampler_setting('float', OPTIONS['percentile']['default'], 'percentile'),
    'history_window': _sampler_setting('str', OPTIONS['history_window']['default'], 'window'),
    'sample_seconds': _sampler_setting('float', OPTIONS['sampler_sample_seconds']['default'], 'sample_seconds',
                                       'CPU sample when no previous run is known'),
    'step_dir': _sampler_setting('path', _state_dir.NODE_LOCK_DIR, 'step_dir', "the apply step's node lock: no "
                                 'reading is recorded while a step holds it', settings=False),
    'cgroup_driver': _sampler_setting('str', None, 'cgroup_driver', "the kubelet's cgroupDriver: picks kubepods where "
                                      "both drivers' groups exist", choices=['systemd', 'cgroupfs']),
    'cgroup_root': _sampler_setting('path', None, settings=False),
    'kubepods_cgroup': _sampler_setting('str', None, settings=False),
    # The unit's, not the run's (_systemd_units renders them into the service and the timer).
    'nice': _sampler_setting('int', OPTIONS['sampler_nice']['default'], run=False),
    'memory_max': _sampler_setting('str', OPTIONS['sampler_memory_max']['default'], run=False),
    'cpu_quota': _sampler_setting('str', OPTIONS['sampler_cpu_quota']['default'], run=False),
    'interval': _sampler_setting('str', OPTIONS['sampler_interval']['default'], run=False),
}


def sampler_defaults():
    """What _sample_once.run takes and its defaults: name -> default."""
    return {name: setting['default'] for name, setting in SAMPLER_OPTIONS.items() if setting['run']}


def sampler_settings_spec():
    """sampler_code's ``settings`` suboptions: every setting the role hands it, required unless it has choices."""
    spec = {}
    for name, setting in SAMPLER_OPTIONS.items():
        if setting['settings']:
            spec[name] = {'type': setting['type']}
            if setting['choices']:
                spec[name]['choices'] = list(setting['choices'])
            else:
                spec[name]['required'] = True
    return spec


def sampler_option_keys(settings_only=False):
    """((setting name, its key in sampler.json and the script's flag)) of the settings the script takes (with
    ``settings_only``, of those sampler_code writes into sampler.json)."""
    return tuple((name, setting['key']) for name, setting in SAMPLER_OPTIONS.items()
                 if setting['key'] and (setting['settings'] or not settings_only))


def role_option_names():
    """The reservations role's variables, without the prefix."""
    return [name for name in OPTIONS if name not in MODULE_ONLY]


_SPEC_KEYS = ('type', 'default', 'choices', 'elements', 'required')


def argument_spec(module, names=None):
    """The AnsibleModule argument spec of ``module`` (every option whose ``modules`` name it), or of ``names``."""
    if module == STEP and names is None:
        spec = argument_spec(None, STEP_SHARED)
        spec.update((name, _spec(option)) for name, option in STEP_OPTIONS.items())
        return spec
    spec = {}
    for name, option in OPTIONS.items():
        if (names is not None and name in names) or (names is None and module in option['modules']):
            spec[name] = _spec(option)
    return spec


def _spec(option):
    spec = {k: option[k] for k in _SPEC_KEYS if option[k] is not None and (k != 'required' or option[k])}
    spec.update({k: option[k] for k in ('removed_in_version', 'removed_from_collection') if k in option})
    return spec


def defaults(names):
    return {name: OPTIONS[name]['default'] for name in names}


def with_defaults(settings, table):
    """``table`` (name -> default) with the values ``settings`` gives for its names; None counts as not given.

    The one place defaults are applied: a function takes its options through this once, at its start, and reads
    ``options[name]`` after (not ``options.get(name) or DEFAULT``, which also replaces a legitimate 0 or ''). A memory
    option that takes a quantity (rule 'quantity_bytes': '256Mi' or 268435456) comes out in bytes.
    """
    settings = settings or {}
    # Over the table, not the settings: a module's parameters are some seventy, a policy function's table a handful.
    filled = dict(table, **{name: settings[name] for name in table if settings.get(name) is not None})
    for name in QUANTITY_BYTES_OPTIONS.intersection(filled):
        filled[name] = quantity_bytes(filled[name])
    return filled


def quantity_bytes(value):
    """Bytes from a memory option: an int (or a string of digits, as a role's template hands it over) is bytes; any
    other string a Kubernetes quantity ('256Mi', '1G'), its value rounded up as Quantity.Value() does. ValueError when it
    is neither, or negative."""
    if isinstance(value, bool):
        raise ValueError('not a memory amount: %r' % (value,))
    if isinstance(value, int):
        amount = value
    elif isinstance(value, float) and value.is_integer():
        amount = int(value)
    else:
        amount = _quantity.quantity_value(_quantity.parse_quantity(str(value).strip()))
    if amount < 0:
        raise ValueError('negative memory amount: %r' % (value,))
    return amount


def _number(value, type_):
    if isinstance(value, bool):
        raise ValueError('not a number')
    return int(value) if type_ == 'int' else float(value)


def _not_finite(value):
    """'nan', 'inf' or '-inf' for a float that is one of them (they pass every range check or never end a wait)."""
    if isinstance(value, float) and not math.isfinite(value):
        return 'nan' if math.isnan(value) else 'inf' if value > 0 else '-inf'
    return None


def _range_problem(value, rule):
    _kind, low, low_inclusive, high, high_inclusive = rule
    below = low is not None and (value < low if low_inclusive else value <= low)
    above = high is not None and (value > high if high_inclusive else value >= high)
    if not (below or above):
        return None
    parts = []
    if low is not None:
        parts.append('%s %s' % ('>=' if low_inclusive else '>', low))
    if high is not None:
        parts.append('%s %s' % ('<=' if high_inclusive else '<', high))
    return 'must be %s' % ' and '.join(parts)


def problem(name, value, table=None):
    """Why ``value`` is not acceptable for option ``name`` (None when it is, or when it is unset).

    ``table``: OPTIONS unless given (the on-node step passes STEP_OPTIONS for its own).
    """
    option = (OPTIONS if table is None else table)[name]
    if value is None:
        return None
    rule = option['rule']
    if option['type'] == 'bool':
        # What ansible-core's convert_bool (and the role's | bool) reads as true or false; anything else the role's
        # | bool would silently read as false.
        if not isinstance(value, (str, int, float)) or \
                (value.strip().lower() if isinstance(value, str) else value) not in _BOOLEANS:
            return 'must be a boolean (true or false)'
        return None
    if option['type'] in ('int', 'float'):
        try:
            value = _number(value, option['type'])
        except (TypeError, ValueError, OverflowError):
            return 'must be a number (%s)' % option['type']
        if _not_finite(value):
            return 'must be a finite number, not %s' % _not_finite(value)
    if option['choices'] is not None and value not in option['choices']:
        return 'must be one of %s' % ', '.join(str(c) for c in option['choices'])
    if rule is None:
        return None
    if isinstance(rule, tuple):
        return _range_problem(value, rule)
    if rule in _option_forms.RULES:
        text = str(value)
        if not text:
            # Empty is "unset" where the option has no fixed default (the role's "" for its optional paths).
            return 'must not be empty' if option['default'] else None
        return _option_forms.RULES[rule](text)
    text = str(value).strip()
    if rule == 'nonempty':
        return None if text else 'must not be empty'
    if rule == 'duration':
        try:
            _duration.parse_window(text)
        except ValueError:
            return 'must be a Go duration such as 90m, 24h or 1h30m, or whole days such as 7d, not negative'
        return None
    if rule == 'quantity':
        try:
            amount = _quantity.parse_quantity(text)
        except ValueError:
            return 'must be a Kubernetes quantity such as 256Mi, 1Gi or 500M'
        return 'must not be negative' if amount < 0 else None
    if rule == 'quantity_bytes':
        try:
            quantity_bytes(value)
        except (TypeError, ValueError):
            return 'must be bytes (104857600) or a Kubernetes quantity (100Mi, 1Gi, 500M), not negative'
        return None
    if rule == 'drop_in_name':
        return _defaults.drop_in_name_problem(text)
    if rule == 'promql_template':
        return _option_forms.query_problem(str(value))
    if rule == 'promql_template_or_empty':
        return _option_forms.query_problem(str(value)) if text else None
    raise AssertionError('unknown rule %r for %s' % (rule, name))


# ansible.module_utils.parsing.convert_bool.BOOLEANS, strings compared in lower case as convert_bool does.
_BOOLEANS = frozenset(('y', 'yes', 'on', '1', 'true', 't', 'n', 'no', 'off', '0', 'false', 'f', 1, 0, 1.0, 0.0))


def unknown(name, prefix=ROLE_PREFIX):
    """The sentence for a role variable the role does not take, naming the nearest one it does (difflib)."""
    # Compared without the prefix, which every name shares and which would make any name look close to some option.
    nearest = difflib.get_close_matches(name[len(prefix):], role_option_names(), n=1, cutoff=0.6)
    return '%s is not an option of the reservations role%s' % (
        name, ' (did you mean %s%s?)' % (prefix, nearest[0]) if nearest
        else '; its options are listed in meta/argument_specs.yml')


# Options the role no longer takes, with what to do instead: a run that still sets one fails the option check before any
# node is touched, saying so, rather than running on without it.
REMOVED = {
    # apply.yml's third play never read it, so "-e reservations_measure_only=true" restarted every kubelet; and as an
    # extra variable it beat apply.yml's own setting in its second play, where "false" rolled every node at once,
    # outside the serial play (docs/rollout.md, "Observe first").
    'measure_only': 'was removed: to install the sampler without touching any kubelet, run playbooks/observe.yml '
                    '(nodealloc.kubelet.observe); apply.yml always applies',
}


def _shown(value):
    """``value`` as a problem shows it: a URL's user information hidden (never printed, even when refused)."""
    if isinstance(value, str) and '@' in value and '://' in value:
        return re.sub(r'(://)[^/@]*@', r'\1(hidden)@', value)
    return value


def check(params, prefix='', report_unknown=False, table=None):
    """Every problem in ``params`` (names without ``prefix`` must be options), one sentence each.

    ``table``: OPTIONS unless given. With ``report_unknown`` (the role's variables: ``prefix`` is ``reservations_``), a name with the prefix that is
    no role option is a problem too: a typo would otherwise leave the default in force without a word.
    """
    problems = []
    for key, value in params.items():
        if prefix and not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        if report_unknown and name in REMOVED:
            problems.append('%s %s' % (key, REMOVED[name]))
            continue
        if report_unknown and name not in role_option_names():
            problems.append(unknown(key, prefix))
            continue
        if name not in (OPTIONS if table is None else table):
            continue
        reason = problem(name, value, table)
        if reason:
            shown = '(hidden)' if (OPTIONS if table is None else table)[name].get('secret') else repr(_shown(value))
            problems.append('%s%s: %s %s' % (prefix, name, shown, reason))
    return problems
