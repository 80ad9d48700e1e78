"""_node_plan.plan: what the role does on a node, decided from facts and options alone (no node, no Ansible).

The facts are shaped as node_reservation_facts returns them; the decisions come from _decision.decide so that
allow_decrease is the policy's own. The messages are the role's (roles/reservations/tasks/main.yml before the plan).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _state_dir
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults, _quantity
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _kubelet_settings
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision, _headroom, _node_plan
from ansible_collections.nodealloc.kubelet.plugins.module_utils._rollout import _config_change, _step_sequence
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _sample_once

MIB = 1024 * 1024
CONFIG = '/var/lib/kubelet/config.yaml'
CONFIG_DIR = '/etc/kubernetes/kubelet.conf.d'
KUBESPRAY_ENV = '/etc/kubernetes/kubelet.env'
LIMIT_FILE = '/sys/fs/cgroup/kubepods.slice/memory.max'


def recommendation(memory='1Gi', cpu='100m', kubepods_limit_bytes=6 * 1024 * MIB):
    return {'kube_reserved': {'memory': memory, 'cpu': cpu}, 'system_reserved': {'memory': '512Mi', 'cpu': '100m'},
            'reserved_memory_bytes': None, 'eviction_hard_memory_bytes': 100 * MIB,
            'kubepods_memory_limit_bytes': kubepods_limit_bytes, 'memory_headroom_bytes': 200 * MIB}


def _sum(reserved, resource, value):
    return sum(value(_quantity.parse_quantity(reserved[k][resource])) for k in ('kube_reserved', 'system_reserved'))


def facts(current_memory='1Gi', recommended_memory='2Gi', allow_decrease=True, config_path=CONFIG, config_dir=None,
          ownership=None, version_refusals=(), unit='kubelet.service', files=None):
    """A node_reservation_facts result: a kubelet with ``current_memory`` in kubeReserved, recommended more or less."""
    current = {'kube_reserved': {'memory': current_memory, 'cpu': '100m'},
               'system_reserved': {'memory': '512Mi', 'cpu': '100m'}}
    recommended = recommendation(memory=recommended_memory)
    recommended.update(reserved_memory_bytes=_sum(recommended, 'memory', _quantity.quantity_value),
                       reserved_millicores=_sum(recommended, 'cpu', _quantity.milli_value))
    decision = _decision.decide(current, recommended, {'allow_decrease': allow_decrease})
    return {
        'kubelet': {'config_path': config_path, 'config_dir': config_dir, 'unit': unit,
                    'ownership': dict({'managers': ['kubeadm'], 'evidence': ['kubeadm: /usr/lib/systemd/system/'
                                                                             'kubelet.service.d/10-kubeadm.conf'],
                                       'config_dir': config_dir, 'refusal': None,
                                       'kubeadm_extra_args_file': '/etc/default/kubelet'}, **(ownership or {})),
                    'version': {'refusals': list(version_refusals), 'warnings': []},
                    'reservation_files': files or {}},
        'cgroup': {'kubepods_limit_file': LIMIT_FILE},
        'current': current,
        'recommendation': recommended,
        'decision': decision,
    }


def test_an_increase_rolls_with_the_decisions_maps_into_the_main_file():
    node = facts()
    planned = _node_plan.plan(node, {})
    assert planned['refusals'] == [] and planned['action'] == 'increase' and planned['rolls']
    assert not planned['add_config_dir']
    assert planned['apply'] == {
        'path': CONFIG, 'kube_reserved': node['decision']['kube_reserved'],
        'system_reserved': node['decision']['system_reserved'], 'unit': 'kubelet.service',
        'kubepods_limit_file': LIMIT_FILE,
        'measured_reserved': {'kube_reserved': node['current']['kube_reserved'],
                              'system_reserved': node['current']['system_reserved']}}
    assert planned['apply']['kube_reserved']['memory'] == '2Gi'
    assert planned['summary'][0] == 'increase (unit kubelet.service, config %s)' % CONFIG
    assert planned['summary'][1:] == node['decision']['reasons']


@pytest.mark.parametrize('allow_decrease,action,rolls', [(True, 'decrease', True), (False, 'keep', False)])
def test_allow_decrease_false_keeps_a_node_that_would_decrease_off_the_rollout(allow_decrease, action, rolls):
    planned = _node_plan.plan(facts(current_memory='3Gi', recommended_memory='1Gi', allow_decrease=allow_decrease), {})
    assert (planned['action'], planned['rolls']) == (action, rolls)
    assert bool(planned['report']['config_diff']) is rolls


def test_where_the_role_found_nothing_the_options_and_kubelet_service_stand_in():
    node = facts(config_path=None, unit=None)
    node['cgroup'] = {'kubepods_limit_file': None}
    planned = _node_plan.plan(node, {'kubelet_config_path': '/etc/kubelet.yaml'})
    assert planned['target'] == {'path': '/etc/kubelet.yaml', 'drop_in_dir': '', 'unit': 'kubelet.service',
                                 'kubepods_limit_file': ''}
    assert 'kubepods_limit_file' not in planned['apply'] and 'drop_in_dir' not in planned['apply']
    assert _node_plan.plan(node, {'kubelet_unit': 'k.service'})['target']['unit'] == 'k.service'
    assert _node_plan.plan(facts(unit='snap.kubelet.service'), {})['target']['unit'] == 'snap.kubelet.service'


def test_every_refusal_is_named_when_the_node_would_change():
    flags = 'the kubelet has --kube-reserved=cpu=1 on its command line'
    node = facts(config_path=None, ownership={'refusal': flags}, version_refusals=['kubelet v1.35.0 would not start'])
    planned = _node_plan.plan(node, {'use_drop_in': 'true', 'kubelet_config_path': '/etc/k.yaml'})
    assert planned['refusals'] == [
        flags, 'kubelet v1.35.0 would not start',
        "no kubelet config found (looked at /etc/k.yaml and the running kubelet's --config): nothing to change",
        'reservations_use_drop_in is true but the kubelet reads no --config-dir and reservations_drop_in_dir is empty']


def test_a_node_that_keeps_its_reservations_is_refused_nothing():
    node = facts(current_memory='2Gi', config_path=None, ownership={'refusal': 'flags'}, version_refusals=['v'])
    planned = _node_plan.plan(node, {'use_drop_in': True})
    assert planned['action'] == 'keep' and planned['refusals'] == [] and not planned['rolls']


@pytest.mark.parametrize('options,refused', [
    ({'use_drop_in': True}, True),
    ({'use_drop_in': 'True', 'drop_in_dir': '/etc/kubelet.d'}, False),
    ({'use_drop_in': 'true', 'enable_config_dir': True}, False),
    ({'use_drop_in': 'auto'}, False),
    ({'use_drop_in': False}, False),
])
def test_a_drop_in_asked_for_needs_a_directory(options, refused):
    message = 'reservations_use_drop_in is true but the kubelet reads no --config-dir and reservations_drop_in_dir is empty'
    assert (message in _node_plan.plan(facts(), options)['refusals']) is refused


@pytest.mark.parametrize('mode,kubelet_config_dir,ownership_config_dir,option_dir,expected', [
    ('auto', None, None, '/opt/d', ''),                       # no --config-dir: the main file
    ('auto', '/etc/k.d', '/etc/k.d', '/opt/d', '/etc/k.d'),   # the running kubelet reads one: our drop-in there
    ('true', '/etc/k.d', '/etc/k.d', '/opt/d', '/etc/k.d'),
    ('true', None, None, '/opt/d', '/opt/d'),                 # reservations_drop_in_dir when the kubelet names none
    ('false', '/etc/k.d', '/etc/k.d', '/opt/d', ''),          # the main file, whatever the kubelet reads
])
def test_drop_in_modes(mode, kubelet_config_dir, ownership_config_dir, option_dir, expected):
    node = facts(config_dir=kubelet_config_dir, ownership={'config_dir': ownership_config_dir})
    planned = _node_plan.plan(node, {'use_drop_in': mode, 'drop_in_dir': option_dir})
    assert planned['target']['drop_in_dir'] == expected
    assert planned['apply'].get('drop_in_dir') == (expected or None)
    assert planned['summary'][0].endswith(', drop-in dir %s)' % expected if expected else 'config %s)' % CONFIG)


def test_enable_config_dir_on_a_kubeadm_node_adds_the_flag_and_writes_there_even_when_keeping():
    node = facts(current_memory='2Gi')  # keep: the flag alone rolls the node
    planned = _node_plan.plan(node, {'enable_config_dir': True})
    assert planned['action'] == 'keep' and planned['add_config_dir'] and planned['rolls']
    assert planned['refusals'] == []
    assert planned['target']['drop_in_dir'] == CONFIG_DIR
    assert planned['apply']['enable_config_dir'] == CONFIG_DIR and planned['apply']['drop_in_dir'] == CONFIG_DIR
    assert planned['apply']['extra_args_file'] == '/etc/default/kubelet'
    # use_drop_in false: the flag is added, the reservations still go into the main file.
    planned = _node_plan.plan(node, {'enable_config_dir': True, 'use_drop_in': 'false', 'config_dir_path': '/etc/c.d'})
    assert planned['apply']['enable_config_dir'] == '/etc/c.d' and 'drop_in_dir' not in planned['apply']


@pytest.mark.parametrize('ownership', [{'config_dir': '/etc/k.d'}, {'refusal': 'flags on the command line'}])
def test_no_config_dir_is_added_where_there_is_one_or_flags_win(ownership):
    planned = _node_plan.plan(facts(current_memory='2Gi', ownership=ownership), {'enable_config_dir': True})
    assert not planned['add_config_dir'] and not planned['rolls'] and 'enable_config_dir' not in planned['apply']


def test_a_kubespray_node_is_stopped_with_what_to_set_in_its_inventory():
    ownership = {'managers': ['kubespray'], 'evidence': ['kubespray: %s' % KUBESPRAY_ENV]}
    planned = _node_plan.plan(facts(current_memory='2Gi', ownership=ownership), {'enable_config_dir': True})
    assert planned['refusals'] == [
        'this node is managed by kubespray (kubespray: %s): add kubelet_custom_flags: ["--config-dir=%s"] to its '
        'inventory and run kubespray; it re-templates %s on every run, so an edit made here would be undone.'
        % (KUBESPRAY_ENV, CONFIG_DIR, KUBESPRAY_ENV)]


def test_a_node_kubeadm_does_not_manage_is_stopped():
    planned = _node_plan.plan(facts(ownership={'managers': [], 'evidence': []}),
                              {'enable_config_dir': True, 'config_dir_path': '/etc/c.d'})
    assert planned['refusals'] == [
        "no kubeadm files found (/var/lib/kubelet/kubeadm-flags.env or a 10-kubeadm.conf drop-in); add "
        "--config-dir=/etc/c.d to the kubelet's command line the way its installer supports."]
    assert _node_plan.plan(facts(ownership={'managers': []}), {})['refusals'] == []  # only when asked to add the flag


def test_another_section_plugs_its_refusal_in_with_one_source():
    node = dict(facts(), other_check={'refusal': 'the other check says no'})
    sources = _node_plan.REFUSAL_SOURCES + (_node_plan.section_refusal('other_check'),)
    assert _node_plan.plan(node, {}, sources)['refusals'] == ['the other check says no']
    assert _node_plan.plan(dict(node, other_check={'refusal': None}), {}, sources)['refusals'] == []


def test_pods_that_would_not_fit_refuse_any_restart_the_config_dir_one_too():
    refused = {'refusal': 'the pods would not fit'}
    assert _node_plan.plan(dict(facts(), requests_fit=refused), {})['refusals'] == ['the pods would not fit']
    kept = dict(facts(current_memory='2Gi', recommended_memory='2Gi'), requests_fit=refused)
    assert _node_plan.plan(kept, {})['action'] == 'keep'
    assert _node_plan.plan(kept, {})['refusals'] == []  # no restart: no pod is admitted again
    # Adding --config-dir restarts the kubelet, which admits every bound pod again.
    assert _node_plan.plan(kept, {'enable_config_dir': True})['refusals'] == ['the pods would not fit']
    assert _node_plan.plan(dict(facts(), requests_fit={'refusal': None}), {})['refusals'] == []


def to_nice_json(document):
    # ansible.builtin.to_nice_json, as the role's copy tasks render the documents.
    return json.dumps(document, indent=4, sort_keys=True, separators=(',', ': '), ensure_ascii=False) + '\n'


def test_status_documents_for_each_call_of_the_step():
    node = facts()
    status = _node_plan.plan(node, {'history_path': '/srv/na/history.jsonl'})['status']
    keep = {'path': '/srv/na/decision.json', 'content': {'action': 'keep', 'eviction_hard_memory_bytes': 100 * MIB}}
    pending = {'path': '/srv/na/decision.json', 'content': {
        'action': 'increase', 'eviction_hard_memory_bytes': 100 * MIB,
        'recommended_kubepods_memory_limit_bytes': 6 * 1024 * MIB}}
    forget = {'path': '/srv/na/reservation.json', 'state': 'absent'}
    assert status['keep'] == {'on_success': [keep], 'on_failure': []}
    assert status['apply'] == {'on_success': [
        {'path': '/srv/na/reservation.json',
         'content': {'reserved_memory_bytes': node['decision']['memory']['recommended_bytes'],
                     'memory_headroom_bytes': 200 * MIB}},
        keep], 'on_failure': [pending]}
    # The API server check failed and the role restored the node: pending again, and the reservation the step's
    # success recorded is no longer in force; a restore that failed leaves the node on it.
    assert status['undo'] == {'on_success': [pending, forget], 'on_failure': [pending]}
    assert status['restore'] == {'on_success': [forget], 'on_failure': []}
    # What the role's copy task wrote before the plan, byte for byte.
    assert to_nice_json(status['apply']['on_failure'][0]['content']) == (
        '{\n    "action": "increase",\n    "eviction_hard_memory_bytes": 104857600,\n'
        '    "recommended_kubepods_memory_limit_bytes": 6442450944\n}\n')
    assert _node_plan.plan(node, {})['status']['keep']['on_success'][0]['path'] == '/var/lib/nodealloc/decision.json'


def test_without_the_sampler_nothing_is_kept_for_it_but_a_rollback_still_forgets_the_applied_reservation():
    status = _node_plan.plan(facts(), {'install_sampler': False})['status']
    nothing = {'on_success': [], 'on_failure': []}
    assert (status['apply'], status['undo'], status['keep']) == (nothing, nothing, nothing)
    # A sampler an earlier run installed still reads it (playbooks/rollback.yml forgot it whatever the option said).
    assert status['restore'] == {'on_success': [{'path': '/var/lib/nodealloc/reservation.json', 'state': 'absent'}],
                                 'on_failure': []}


def test_every_status_document_is_one_the_step_accepts():
    for install_sampler in (True, False):
        for call in _node_plan.plan(facts(), {'install_sampler': install_sampler})['status'].values():
            assert _step_sequence.check_status(call) is None, call


@pytest.mark.parametrize('history_path,state_dir', [
    ('/var/lib/nodealloc/history.jsonl', '/var/lib/nodealloc'),
    ('/srv/nodealloc-b/history.jsonl', '/srv/nodealloc-b'),
])
def test_the_state_paths_follow_the_history_under_the_names_the_sampler_reads(history_path, state_dir):
    paths = _node_plan.plan(facts(), {'history_path': history_path})['paths']
    assert paths == {'state_dir': state_dir, 'history': history_path,
                     'sampler_state': state_dir + '/sampler-state.json', 'decision': state_dir + '/decision.json',
                     'applied': state_dir + '/reservation.json'}
    # The sampler finds the applied reservation beside the decision file it is given.
    assert _state_dir.beside(paths['decision'], _sample_once.RESERVATION_FILE) == paths['applied']


def test_the_state_paths_at_the_defaults_are_the_samplers_defaults():
    paths = _node_plan.plan(facts(), {})['paths']
    assert paths['history'] == _sample_once.DEFAULTS['history_path']
    assert paths['decision'] == _sample_once.DEFAULTS['decision_path']
    assert paths['sampler_state'] == _sample_once.DEFAULTS['state_path']


@pytest.mark.parametrize('options,apply_seconds,restore_seconds', [
    # The role's defaults: a 300 s lock wait, 120 s for health, a 30 s soak.
    ({}, 300 + 2 * 120 + 30 + 120, 300 + 120 + 30 + 120),
    ({'node_lock_timeout_seconds': 0, 'health_timeout_seconds': 20, 'health_soak_seconds': 0}, 160, 140),
    ({'node_lock_timeout_seconds': 10, 'health_timeout_seconds': 5, 'health_soak_seconds': 7}, 147, 142),
])
def test_the_steps_time_budget_covers_the_lock_wait_health_soak_and_a_restore(options, apply_seconds,
                                                                              restore_seconds):
    assert _node_plan.plan(facts(), options)['time_budget_seconds'] == {'apply': apply_seconds,
                                                                        'restore': restore_seconds}


@pytest.mark.parametrize('options,recorded', [
    ({}, False),  # the sampler is installed by default: it records every minute
    ({'install_sampler': True}, False),
    ({'install_sampler': False}, True),  # no sampler: the role's own measurement builds the history
    ({'install_sampler': False, 'record': False}, False),  # as asked
    ({'install_sampler': True, 'record': True}, True),
    ({'record': None, 'install_sampler': False}, True),  # None: AnsibleModule's value for an option left unset
])
def test_a_reading_is_recorded_as_asked_else_where_no_sampler_records(options, recorded):
    assert _node_plan.records(options) is recorded


def test_a_memory_decision_of_keep_writes_back_the_memory_reserved_before():
    node = facts(current_memory='1Gi', recommended_memory='1000Mi')  # within the threshold: memory keeps
    node['recommendation']['kube_reserved']['cpu'] = '900m'  # CPU alone increases, a need the last day sustained
    node['recommendation']['reserved_millicores'] = 1000
    day = [{'t': 60.0 * minute, 'non_pod_bytes': 0, 'non_pod_millicores': 1000} for minute in range(24 * 60 + 1)]
    node['decision'] = _decision.decide(node['current'], node['recommendation'], {},
                                        _headroom.basis(day, day[-1]['t'], 100.0, 86400, 86400))
    assert node['decision']['memory']['action'] == 'keep' and node['decision']['action'] == 'increase'
    applied = _node_plan.plan(node, {})['status']['apply']['on_success'][0]['content']
    assert node['decision']['memory']['now_bytes'] != node['decision']['memory']['recommended_bytes']
    assert applied['reserved_memory_bytes'] == node['decision']['memory']['now_bytes']


def test_the_report_diff_of_the_main_file_is_of_its_own_fields():
    # A drop-in sets systemReserved; the main file holds only kubeReserved, which is what the step edits.
    files = {CONFIG: {'exists': True, 'format': 'yaml', 'fields': {'kubeReserved': {'memory': '1Gi', 'cpu': '100m'}}}}
    planned = _node_plan.plan(facts(files=files), {'use_drop_in': 'false'})
    diff = planned['report']['config_diff']
    assert planned['report']['target'] == CONFIG
    assert diff[:2] == ['--- %s (now)' % CONFIG, '+++ %s (apply)' % CONFIG]
    changed = [line for line in diff[2:] if line[:1] in '+-']
    assert changed == ['-  memory: 1Gi', '+  memory: 2Gi', '+systemReserved:', '+  memory: 512Mi', '+  cpu: 100m']


def test_the_report_diff_is_our_whole_new_drop_in_where_the_step_writes_one():
    files = {CONFIG: {'exists': True, 'format': 'yaml', 'fields': {}},
             CONFIG_DIR + '/50-nodealloc.conf': {'exists': False, 'format': None, 'fields': {}}}
    planned = _node_plan.plan(facts(config_dir=CONFIG_DIR, files=files), {})
    diff = planned['report']['config_diff']
    assert planned['report']['target'] == CONFIG_DIR + '/50-nodealloc.conf'
    assert diff[:2] == ['--- %s/50-nodealloc.conf (now)' % CONFIG_DIR, '+++ %s/50-nodealloc.conf (apply)' % CONFIG_DIR]
    assert diff[3:] == ['+apiVersion: kubelet.config.k8s.io/v1beta1', '+kind: KubeletConfiguration',
                        '+kubeReserved:', '+  memory: 2Gi', '+  cpu: 100m',
                        '+systemReserved:', '+  memory: 512Mi', '+  cpu: 100m']


def test_the_report_diff_of_an_existing_drop_in_keeps_its_format_and_other_fields():
    ours = CONFIG_DIR + '/50-nodealloc.conf'
    files = {ours: {'exists': True, 'format': 'json', 'fields': {
        'apiVersion': 'kubelet.config.k8s.io/v1beta1', 'kind': 'KubeletConfiguration',
        'kubeReserved': {'memory': '1Gi', 'cpu': '100m'}, 'systemReserved': {'memory': '512Mi', 'cpu': '100m'}}}}
    diff = _node_plan.plan(facts(config_dir=CONFIG_DIR, files=files), {})['report']['config_diff']
    assert [line for line in diff[2:] if line[:1] in '+-'] == ['-    "memory": "1Gi",', '+    "memory": "2Gi",']


def test_a_new_drop_in_that_changes_nothing_is_not_written_so_the_report_shows_nothing():
    # enable_config_dir on a node that keeps: the step adds the flag, and the drop-in it would write holds what the
    # kubelet reads already (_config_change.plan compares the effective configs), so it writes none.
    planned = _node_plan.plan(facts(current_memory='2Gi'), {'enable_config_dir': True})
    assert planned['rolls']
    assert planned['report'] == {'target': CONFIG_DIR + '/50-nodealloc.conf', 'config_diff': []}


@pytest.mark.parametrize('drop_in', [False, True], ids=['main file', 'drop-in'])
def test_the_report_diff_ends_in_the_text_the_on_node_step_writes(tmp_path, drop_in):
    main = tmp_path / 'config.yaml'
    main.write_text('apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
                    'kubeReserved:\n  memory: 1Gi\n  cpu: 100m\n')
    config_dir = tmp_path / 'conf.d'
    config_dir.mkdir()
    node = facts(config_path=str(main), config_dir=str(config_dir) if drop_in else None)
    node['kubelet']['reservation_files'] = _kubelet_settings.reservation_files(node['kubelet'], None,
                                                                               _defaults.KUBEADM_CONFIG_DIR)
    planned = _node_plan.plan(node, {})
    written = _config_change.plan(dict(planned['apply'], state='present'))
    expected_target = str(config_dir / '50-nodealloc.conf') if drop_in else str(main)
    assert written['target'] == planned['report']['target'] == expected_target
    after = [line[1:] for line in planned['report']['config_diff'][3:] if line[:1] in ' +']
    if drop_in:  # the whole drop-in
        assert '\n'.join(after) + '\n' == written['text']
    else:  # the reservation fields of the main file, as the step's minimal edit leaves them
        assert set(after) <= set(written['text'].splitlines()) and '  memory: 2Gi' in after


# Issue 35: the "before" of the diff was computed from reservations nobody had validated (kubeReserved: '5' raised).
@pytest.mark.parametrize('in_file, in_current', [
    ('5', None), (['memory'], None), ({'memory': 'lots'}, None), ({'memory': '1e999999'}, None), (None, '5'),
])
def test_reservations_in_force_that_do_not_parse_are_refused_not_diffed(in_file, in_current):
    node = facts()
    if in_file is not None:
        node['kubelet']['reservation_files'] = {CONFIG: {'fields': {'kubeReserved': in_file}, 'format': 'yaml',
                                                         'exists': True}}
    if in_current is not None:
        node['current']['kube_reserved'] = in_current
    planned = _node_plan.plan(node, {})
    assert planned['rolls'] and planned['report'] == {'target': None, 'config_diff': []}
    assert [r for r in planned['refusals'] if r.startswith('the reservations in force are not valid')], planned
