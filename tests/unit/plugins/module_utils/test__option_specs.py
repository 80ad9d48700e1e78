"""_option_specs is the one home of every default, type, choice and range: everything else must agree with it.

The drift checks iterate over everything (every option of every module's DOCUMENTATION and doc fragments, every
role option, every role default), so an option added anywhere is checked without editing this file.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil

import pytest
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults, _vendor_formulas
from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _decision, _recommend
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import (
    KUBELET_CONFIG_OPTIONS, KUBELET_RESERVATIONS_APPLY_OPTIONS, NODE_RESERVATION_FACTS_OPTIONS)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ROLE = os.path.join(ROOT, 'roles', 'reservations')
OPTIONS = _option_specs.OPTIONS
MODULE_SPECS = {'node_reservation_facts': NODE_RESERVATION_FACTS_OPTIONS, 'kubelet_config': KUBELET_CONFIG_OPTIONS,
                'kubelet_reservations_apply': KUBELET_RESERVATIONS_APPLY_OPTIONS}
# The on-node step's own options (two of their names mean something else in OPTIONS).
MODULE_TABLES = {'kubelet_reservations_apply': _option_specs.STEP_OPTIONS}


def documented_options(module_name):
    """A module's options as ansible-doc shows them: its DOCUMENTATION merged with its doc fragments."""
    module = importlib.import_module('ansible_collections.nodealloc.kubelet.plugins.modules.%s' % module_name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = dict(doc.get('options') or {})
    for fragment in doc.get('extends_documentation_fragment') or []:
        parts = fragment.split('.')
        fragment_module = importlib.import_module('ansible_collections.nodealloc.kubelet.plugins.doc_fragments.%s'
                                                  % parts[2])
        text = getattr(fragment_module.ModuleDocFragment, parts[3] if len(parts) > 3 else 'DOCUMENTATION')
        options.update(yaml.safe_load(text).get('options') or {})
    return options


def _same(spec_value, other):
    # The role writes "" for "not set"; a spec writes None.
    if spec_value is None and other == '':
        return True
    return spec_value == other


def option_drift(name, documented, where, table=None):
    """Problems between a documented option (type, default, choices, elements, required) and OPTIONS."""
    table = OPTIONS if table is None or name not in table else table
    if name not in table:
        return ['%s: %s is not in _option_specs.OPTIONS' % (where, name)]
    spec, problems = table[name], []
    for key in ('type', 'default', 'choices', 'elements'):
        if not _same(spec[key], documented.get(key)):
            problems.append('%s: %s %s is %r, _option_specs says %r' % (where, name, key, documented.get(key), spec[key]))
    if bool(documented.get('required')) != spec['required']:
        problems.append('%s: %s required is %r, _option_specs says %r'
                        % (where, name, documented.get('required'), spec['required']))
    return problems


def module_drift(module_name, documented):
    problems = []
    spec = MODULE_SPECS[module_name]
    for name in sorted(set(documented) | set(spec)):
        if name not in documented:
            problems.append('%s: %s is in the argument spec but not documented' % (module_name, name))
        elif name not in spec:
            problems.append('%s: %s is documented but not in the argument spec' % (module_name, name))
        else:
            problems.extend(option_drift(name, documented[name], module_name, MODULE_TABLES.get(module_name)))
            for key in ('type', 'default', 'choices', 'elements'):
                if spec[name].get(key) != documented[name].get(key):
                    problems.append('%s: %s %s is %r in the argument spec, %r in the docs'
                                    % (module_name, name, key, spec[name].get(key), documented[name].get(key)))
    return problems


def role_drift(argument_specs_path, defaults_path):
    with open(argument_specs_path) as stream:
        role_options = yaml.safe_load(stream)['argument_specs']['main']['options']
    with open(defaults_path) as stream:
        role_defaults = yaml.safe_load(stream)
    problems = []
    for variable in sorted(set(role_options) | set(role_defaults)):
        if variable not in role_options:
            problems.append('defaults/main.yml: %s is not in meta/argument_specs.yml' % variable)
            continue
        if variable not in role_defaults:
            problems.append('meta/argument_specs.yml: %s has no value in defaults/main.yml' % variable)
            continue
        computed = isinstance(role_defaults[variable], str) and '{{' in role_defaults[variable]
        if computed:
            # A default the role computes (a template): argument_specs can only describe it, and the one home
            # says it has no fixed default.
            if role_options[variable].get('default') is not None:
                problems.append('%s: a computed default must have no default in argument_specs.yml' % variable)
            name = variable[len(_option_specs.ROLE_PREFIX):]
            if name not in OPTIONS or OPTIONS[name]['default'] is not None:
                problems.append('%s: a computed default must be in _option_specs.OPTIONS with default None' % variable)
            continue
        if role_options[variable].get('default') != role_defaults[variable]:
            problems.append('%s: argument_specs.yml default %r, defaults/main.yml %r'
                            % (variable, role_options[variable].get('default'), role_defaults[variable]))
        name = variable[len(_option_specs.ROLE_PREFIX):]
        problems.extend(option_drift(name, role_options[variable], 'meta/argument_specs.yml'))
        if name in OPTIONS and not _same(OPTIONS[name]['default'], role_defaults[variable]):
            problems.append('defaults/main.yml: %s is %r, _option_specs says %r'
                            % (variable, role_defaults[variable], OPTIONS[name]['default']))
    return problems


@pytest.mark.parametrize('module_name', sorted(MODULE_SPECS))
def test_module_documentation_matches_the_specs(module_name):
    assert module_drift(module_name, documented_options(module_name)) == []


def test_role_options_and_defaults_match_the_specs():
    assert role_drift(os.path.join(ROLE, 'meta', 'argument_specs.yml'), os.path.join(ROLE, 'defaults', 'main.yml')) == []


def spec_defaults():
    return {name: option['default'] for name, option in OPTIONS.items() if option['default'] is not None}


GI, MI = 1 << 30, 1 << 20
MEASURED = dict(mem_total_bytes=16 * GI, mem_available_bytes=9 * GI, kubepods_working_set_bytes=6 * GI,
                kube_components_working_set_bytes=300 * MI, capacity_millicores=4000, non_pod_millicores=420,
                kube_components_millicores=150)


JUMPS = {'memory_bytes': 300 * MI, 'millicores': 200, 'windows': 7, 'reaction_seconds': 86400, 'horizon_seconds': 7 * 86400}


# A single reading (its own headroom factor), a settled history without climbs (the percentage rule), and one with a
# climb per reaction time (the jump rule).
@pytest.mark.parametrize('samples, jumps', [(1, None), (500, None), (500, JUMPS)])
def test_recommend_with_no_settings_is_recommend_at_the_documented_defaults(samples, jumps):
    # What recommend does when a caller passes nothing must be what the options' documented defaults do: a default
    # the function keeps of its own (or one it drops) shows here, as a different reservation.
    basis = {'samples': samples, 'span_seconds': 7 * 86400 if samples > 1 else 0, 'percentile': 100.0,
             'non_pod_bytes': 700 * MI, 'non_pod_millicores': 420, 'jumps': jumps}
    formulas = _vendor_formulas.all_formulas(MEASURED['mem_total_bytes'], 4)
    bare = _recommend.recommend(MEASURED, {}, None, basis, formulas)
    assert bare == _recommend.recommend(MEASURED, spec_defaults(), None, basis, formulas)
    # ... and the settings are read at all (else the two would agree whatever the defaults).
    assert bare != _recommend.recommend(MEASURED, dict(spec_defaults(), memory_headroom_percent=40.0), None, basis,
                                        formulas)


@pytest.mark.parametrize('memory_mi', [2048 - 300, 2048 - 210, 2048 - 150, 2048 + 40, 2048 + 70, 2048 + 150])
@pytest.mark.parametrize('cpu_m', [100, 160, 240, 300])
def test_decide_with_no_settings_is_decide_at_the_documented_defaults(memory_mi, cpu_m):
    # Changes around the default thresholds (64 MiB / 10 %, 50 m): a threshold decide keeps of its own shows here.
    current = {'kube_reserved': {'memory': '1Gi', 'cpu': '100m'}, 'system_reserved': {'memory': '1Gi', 'cpu': '100m'}}
    recommendation = {'kube_reserved': {'memory': '%dMi' % (memory_mi // 2), 'cpu': '%dm' % (cpu_m // 2)},
                      'system_reserved': {'memory': '%dMi' % (memory_mi - memory_mi // 2), 'cpu': '%dm' % (cpu_m - cpu_m // 2)}}
    assert _decision.decide(current, recommendation) == _decision.decide(current, recommendation, spec_defaults())


def test_every_role_variable_is_passed_or_used_by_the_role():
    # An option the role declares but never reads would be a silent no-op.
    text = ''
    for directory, _dirs, files in os.walk(ROLE):
        if os.sep + 'meta' in directory or os.sep + 'defaults' in directory:
            continue
        for file_name in files:
            with open(os.path.join(directory, file_name), errors='replace') as stream:
                text += stream.read()
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as stream:
        variables = yaml.safe_load(stream)
    assert [v for v in variables if v not in text] == []


def test_every_task_file_a_playbook_includes_is_an_entry_point_with_the_roles_options():
    # ansible-core validates an include_role against the entry point named exactly as its tasks_from: a file name
    # with its extension, or one with no entry point, would run unchecked.
    with open(os.path.join(ROLE, 'meta', 'argument_specs.yml')) as stream:
        specs = yaml.safe_load(stream)['argument_specs']
    included = []
    playbooks = os.path.join(ROOT, 'playbooks')
    for name in sorted(os.listdir(playbooks)):
        with open(os.path.join(playbooks, name)) as stream:
            for play in yaml.safe_load(stream):
                for task in play.get('tasks', []):
                    include = task.get('ansible.builtin.include_role') or {}
                    if include.get('name') == 'nodealloc.kubelet.reservations' and 'tasks_from' in include:
                        included.append(include['tasks_from'])
    assert sorted(set(included)) == ['check_options', 'decide', 'measure', 'observe', 'restore', 'rollout']
    for entry_point in included:
        assert os.path.exists(os.path.join(ROLE, 'tasks', entry_point + '.yml'))
        # check_options checks every variable itself and names every problem at once (its spec has none, on purpose).
        assert specs[entry_point]['options'] == ({} if entry_point == 'check_options' else specs['main']['options'])


# The drift checks must fail on a deliberately changed copy, or they prove nothing.

def _role_copy(tmp_path):
    for name in ('meta', 'defaults'):
        shutil.copytree(os.path.join(ROLE, name), str(tmp_path / name))
    return str(tmp_path / 'meta' / 'argument_specs.yml'), str(tmp_path / 'defaults' / 'main.yml')


def test_drift_check_reports_a_changed_role_default(tmp_path):
    specs, defaults = _role_copy(tmp_path)
    with open(defaults) as stream:
        text = stream.read()
    with open(defaults, 'w') as stream:
        # The default as OPTIONS has it (it moves with the policy: issue 38), one byte more.
        default = _option_specs.OPTIONS['memory_headroom_min_bytes']['default']
        changed = text.replace('reservations_memory_headroom_min_bytes: %d' % default,
                               'reservations_memory_headroom_min_bytes: %d' % (default + 1))
        assert changed != text
        stream.write(changed)
    problems = role_drift(specs, defaults)
    assert any('reservations_memory_headroom_min_bytes' in p and str(default + 1) in p for p in problems), problems


def test_drift_check_reports_a_changed_argument_spec_default(tmp_path):
    specs, defaults = _role_copy(tmp_path)
    with open(specs) as stream:
        data = yaml.safe_load(stream)
    data['argument_specs']['main']['options']['reservations_percentile']['default'] = 95.0
    with open(specs, 'w') as stream:
        yaml.safe_dump(data, stream)
    problems = role_drift(specs, defaults)
    assert any('reservations_percentile' in p and '95.0' in p for p in problems), problems


def test_drift_check_reports_a_changed_doc_fragment_default():
    documented = documented_options('node_reservation_facts')
    documented['min_reserved'] = dict(documented['min_reserved'], default='512Mi')
    problems = module_drift('node_reservation_facts', documented)
    assert problems == ["node_reservation_facts: min_reserved default is '512Mi', _option_specs says '256Mi'",
                        "node_reservation_facts: min_reserved default is '256Mi' in the argument spec, '512Mi' in the docs"]


def test_drift_check_reports_an_undocumented_option():
    documented = documented_options('kubelet_config')
    del documented['lock_timeout']
    assert module_drift('kubelet_config', documented) == [
        'kubelet_config: lock_timeout is in the argument spec but not documented']


def test_a_changed_home_changes_the_module_spec(monkeypatch):
    # Changing a default in its one home changes what the module is built with.
    monkeypatch.setitem(OPTIONS, 'percentile', dict(OPTIONS['percentile'], default=99.0))
    assert _option_specs.argument_spec('node_reservation_facts')['percentile']['default'] == 99.0


# The kubelet's own defaults.

@pytest.mark.parametrize('configured,effective', [
    (None, ['pods']), ([], []), (['pods', 'system-reserved'], ['pods', 'system-reserved'])])
def test_enforce_node_allocatable_default_applies_only_when_absent(configured, effective):
    # pkg/kubelet/apis/config/v1beta1/defaults.go: `if obj.EnforceNodeAllocatable == nil { ... ["pods"] }`.
    assert _defaults.effective_enforce_node_allocatable(configured) == effective


# Ranges: one case per rule, each bad value named with the option, the value and the rule.

@pytest.mark.parametrize('name,value,rule', [
    ('percentile', 150, 'must be > 0 and <= 100'),
    ('percentile', 0, 'must be > 0 and <= 100'),
    ('max_reserved_fraction', 0, 'must be > 0 and < 1'),
    ('max_reserved_fraction', 2, 'must be > 0 and < 1'),
    ('memory_headroom_percent', -1, 'must be >= 0'),
    ('memory_headroom_min_bytes', -1, 'not negative'),
    ('cpu_headroom_percent', -0.5, 'must be >= 0'),
    ('cpu_headroom_min_millicores', -50, 'must be >= 0'),
    ('change_threshold_percent', -5, 'must be >= 0'),
    ('change_threshold_min_bytes', -1, 'not negative'),
    ('change_threshold_min_millicores', -1, 'must be >= 0'),
    ('sample_seconds', -1, 'must be >= 0'),
    ('max_pods', 0, 'must be >= 1'),
    ('lock_timeout', -1, 'must be >= 0'),
    ('health_timeout_seconds', 0, 'must be >= 1'),
    ('history_window', '7 days', 'must be a Go duration'),
    ('stabilization_window', '-1h', 'must be a Go duration'),
    ('min_reserved', 'lots', 'must be a Kubernetes quantity'),
    ('kubepods_margin', '-1Gi', 'must not be negative'),
    ('drop_in_name', 'nodealloc.yaml', 'ending in .conf'),
    ('policy', 'azure', 'must be one of measured, gke'),
    ('openshift_sizing_version', 3, 'must be one of 1, 2'),
    ('percentile', 'high', 'must be a number'),
])
def test_check_names_option_value_and_rule(name, value, rule):
    problems = _option_specs.check({name: value})
    assert len(problems) == 1 and problems[0].startswith('%s: %r ' % (name, value)) and rule in problems[0], problems


@pytest.mark.parametrize('name,value', [('percentile', 100), ('percentile', 0.1), ('max_reserved_fraction', 0.99),
                                        ('history_window', '7d'), ('history_window', '1h30m'), ('min_reserved', '0'),
                                        ('memory_headroom_percent', 0), ('percentile', '95')])
def test_check_accepts_edges_inside_the_rules(name, value):
    assert _option_specs.check({name: value}) == []


def test_every_default_passes_its_own_rule():
    assert _option_specs.check({name: option['default'] for name, option in OPTIONS.items()}) == []


def test_check_strips_the_role_prefix_and_skips_unknown_names():
    assert _option_specs.check({'reservations_percentile': 150, 'reservations_unknown': -1, 'other': 1},
                               'reservations_') == ["reservations_percentile: 150 must be > 0 and <= 100"]


def test_the_roles_options_are_the_options_less_the_module_only_ones():
    # check(report_unknown=True) calls every other reservations_* name a typo: the two lists must agree.
    with open(os.path.join(ROLE, 'meta', 'argument_specs.yml')) as stream:
        role_options = yaml.safe_load(stream)['argument_specs']['main']['options']
    assert sorted(role_options) == sorted(_option_specs.ROLE_PREFIX + name for name in _option_specs.role_option_names())
    assert _option_specs.MODULE_ONLY <= set(OPTIONS)


@pytest.mark.parametrize('name,nearest', [
    ('reservations_percentil', 'reservations_percentile'),
    ('reservations_sample_second', 'reservations_sample_seconds'),
    ('reservations_helthz_url', 'reservations_healthz_url'),
    ('reservations_sampler_cpuquota', 'reservations_sampler_cpu_quota'),
])
def test_an_unknown_role_variable_is_named_with_the_nearest_option(name, nearest):
    problems = _option_specs.check({name: 90, 'reservations_percentile': 95}, 'reservations_', report_unknown=True)
    assert problems == ['%s is not an option of the reservations role (did you mean %s?)' % (name, nearest)]


def test_an_unknown_name_far_from_every_option_says_where_the_options_are():
    problems = _option_specs.check({'reservations_zzz': 1}, 'reservations_', report_unknown=True)
    assert problems == ['reservations_zzz is not an option of the reservations role; its options are listed in '
                        'meta/argument_specs.yml']


def test_a_module_only_option_is_unknown_to_the_role():
    # The module decides record itself and the role passes class_peers; a user's reservations_record would do nothing.
    problems = _option_specs.check({'reservations_record': True}, 'reservations_', report_unknown=True)
    assert len(problems) == 1 and problems[0].startswith('reservations_record is not an option of the reservations role')


def test_measure_only_is_refused_naming_observe_yml():
    # apply.yml -e reservations_measure_only=true, docs/templates.md's old step 1, restarted every kubelet (its serial
    # play never read the variable); an extra variable of that name also beat apply.yml's own setting in its second
    # play. Now it stops the run before any node is touched, and says what to run instead.
    problems = _option_specs.check({'reservations_measure_only': True}, 'reservations_', report_unknown=True)
    assert problems == ['reservations_measure_only was removed: to install the sampler without touching any kubelet, '
                        'run playbooks/observe.yml (nodealloc.kubelet.observe); apply.yml always applies']


def test_without_report_unknown_other_names_are_skipped():
    assert _option_specs.check({'reservations_percentil': 90}, 'reservations_') == []


# Values seen or feared from operators: each reaches a unit file, an environment file, a URL or a path on the node.
@pytest.mark.parametrize('name,value,rule', [
    ('sampler_cpu_quota', '200', 'must be a percentage with a % sign'),
    ('sampler_cpu_quota', '0%', 'must be more than 0%'),
    ('sampler_cpu_quota', '20%\nExecStartPre=/bin/sh', 'must be printable ASCII'),
    # Issue 35, each confirmed with systemd-analyze verify: passed the old checks and broke the sampler's units.
    ('sampler_interval', '\n1min', 'must be printable ASCII'),  # "Timer unit lacks value setting"
    ('sampler_interval', '1min\x0b', 'must be printable ASCII'),  # the interval ignored: one run per boot
    ('sampler_interval', '1min ', 'must not start or end with whitespace'),
    ('sampler_cpu_quota', '\uff12\uff10%', 'must be printable ASCII'),  # fullwidth digits: CPUQuota= ignored
    ('sampler_memory_max', '\u0666\u0664M', 'must be printable ASCII'),  # Arabic-Indic digits: MemoryMax= ignored
    ('history_path', '/history.jsonl', 'must not be directly under /'),  # ReadWritePaths=-/
    ('sampler_dir', '/', 'must not be /'),
    ('kubelet_unit', 'kubelet.service\n', 'must be a systemd unit name'),
    ('sampler_memory_max', '64 MB', "systemd's MemoryMax="),
    ('sampler_memory_max', '', 'must not be empty'),
    ('sampler_interval', 'every minute', 'systemd time span'),
    ('healthz_url', 'localhost:10248', 'must be an http:// or https:// URL with a host'),
    ('healthz_url', '127.0.0.1:10248/healthz', 'must be an http:// or https:// URL'),
    ('healthz_url', 'ftp://127.0.0.1/healthz', 'must be an http:// or https:// URL'),
    ('healthz_url', 'http://127.0.0.1:99999/healthz', 'must have a port from 1 to 65535'),
    ('healthz_url', '', 'must not be empty'),
    ('sampler_textfile_path', "/var/lib/x.prom' --history /tmp/evil", "must not contain whitespace or any of"),
    ('sampler_textfile_path', 'nodealloc.prom', 'must be an absolute path'),
    ('history_path', '/var/lib/nodealloc/history\n.jsonl', 'must not contain control characters'),
    ('history_path', '/var/lib/$HOME/history.jsonl', "found '$'"),
    ('history_path', '/var/lib/%h/history.jsonl', "found '%'"),
    ('sampler_dir', '/usr/local/lib/node alloc', "found ' '"),
    ('config_dir_path', '/etc/kubernetes/kubelet.conf.d"', 'found \'"\''),
    ('kubelet_config_path', 'config.yaml', 'must be an absolute path'),
    ('kubelet_unit', 'kubelet.service; reboot', 'must be a systemd unit name'),
    ('install_sampler', 'maybe', 'must be a boolean'),
    ('allow_decrease', 2, 'must be a boolean'),
])
def test_values_that_reach_units_urls_and_paths_are_checked_for_their_form(name, value, rule):
    problems = _option_specs.check({name: value})
    assert len(problems) == 1 and problems[0].startswith('%s: %r ' % (name, value)) and rule in problems[0], problems


@pytest.mark.parametrize('name,value', [
    ('sampler_cpu_quota', '150%'), ('sampler_cpu_quota', '12.5%'), ('sampler_memory_max', '64M'),
    ('sampler_memory_max', '1.5G'), ('sampler_memory_max', 'infinity'), ('sampler_memory_max', '10%'),
    ('sampler_interval', '30s'), ('sampler_interval', '2h 30min'), ('sampler_interval', '90'),
    ('healthz_url', 'https://[::1]:10250/healthz'), ('kubelet_unit', 'kubelet@main.service'), ('kubelet_unit', ''),
    ('drop_in_dir', ''), ('install_sampler', 'yes'), ('allow_decrease', False), ('history_path', '/srv/na/h.jsonl'),
])
def test_values_of_the_right_form_pass(name, value):
    assert _option_specs.check({name: value}) == []


def test_with_defaults_keeps_a_given_zero_or_empty_and_drops_what_the_table_does_not_name():
    table = {'sample_seconds': 10, 'textfile_path': '/var/lib/x.prom', 'percentile': 100.0}
    assert _option_specs.with_defaults({'sample_seconds': 0, 'textfile_path': '', 'percentile': None, 'other': 1}, table) \
        == {'sample_seconds': 0, 'textfile_path': '', 'percentile': 100.0}
    assert _option_specs.with_defaults(None, table) == table


# What _option_specs may load: the kubelet's own model and the state paths (issue 34). The controller-side option
# check (check_options.yml's option_problems filter) imports it, and kubelet_config ships what it imports to the node.
LEAF_IMPORTS = {'_option_specs', '_option_forms', '_state_dir', '_errors', '_kubelet', '_kubelet._defaults', '_kubelet._duration',
                '_kubelet._quantity', '_kubelet._vendor_formulas'}


def test_importing_the_option_specs_loads_no_node_code():
    import subprocess
    import sys
    prefix = 'ansible_collections.nodealloc.kubelet.plugins.module_utils.'
    code = ('import sys\nfrom ansible_collections.nodealloc.kubelet.plugins.module_utils import _option_specs\n'
            'print("\\n".join(sorted(m for m in sys.modules if m.startswith(%r))))' % prefix)
    done = subprocess.run([sys.executable, '-c', code], stdout=subprocess.PIPE, check=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    loaded = {name[len(prefix):] for name in done.stdout.decode().split()}
    assert '_option_specs' in loaded  # the listing saw the import itself
    assert loaded - LEAF_IMPORTS == set()


def _sampler_code_settings():
    module = importlib.import_module('ansible_collections.nodealloc.kubelet.plugins.modules.sampler_code')
    return module, yaml.safe_load(module.DOCUMENTATION)['options']['settings']['suboptions']


def test_sampler_codes_documented_settings_are_the_sampler_options():
    module, documented = _sampler_code_settings()
    spec = _option_specs.sampler_settings_spec()
    assert module.SETTINGS_SPEC == spec
    assert {name: (doc['type'], bool(doc.get('required')), doc.get('choices')) for name, doc in documented.items()} \
        == {name: (s['type'], bool(s.get('required')), s.get('choices')) for name, s in spec.items()}


def _sampler_script():
    """The script's namespace without running its main. Not runpy.run_path: under ansible-test the collection loader's
    path hook claims any path in the collection tree, and run_path then looks for a __main__ module "in" the script
    (as tests/unit/roles/test_reservations_sampler_script.py says)."""
    path = os.path.join(ROLE, 'files', 'nodealloc-sampler.py')
    namespace = {'__name__': 'nodealloc_sampler', '__file__': path}
    with open(path, encoding='utf-8') as handle:
        exec(compile(handle.read(), path, 'exec'), namespace)  # pylint: disable=exec-used
    return namespace


def test_the_sampler_scripts_flags_sampler_json_and_the_runs_defaults_are_the_sampler_options():
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _sample_once, _systemd_units
    script = _sampler_script()
    keys = dict(_option_specs.sampler_option_keys())
    # Every setting the run takes, with the default the run applies when neither sampler.json nor a flag gives it.
    run_settings = {name for name, s in _option_specs.SAMPLER_OPTIONS.items() if s['run']}
    assert set(_sample_once.DEFAULTS) == run_settings
    parsed = script['parse_args']([])
    assert parsed == dict({key: _sample_once.DEFAULTS[name] for name, key in keys.items()}, config='')
    assert [flag for flag, _default, _kind, _help in script['OPTIONS']] \
        == ['--config'] + ['--' + key.replace('_', '-') for key in keys.values()]
    # sampler.json carries what sampler_code is given, under the script's names; the script reads every one.
    assert dict(_systemd_units.OPTION_KEYS) == {name: key for name, key in keys.items()
                                                if name in _option_specs.sampler_settings_spec()}


def test_a_sampler_setting_given_in_sampler_json_reaches_the_run_under_its_own_name(tmp_path, monkeypatch):
    script = _sampler_script()
    config = tmp_path / 'sampler.json'
    given = {key: 'x' if _option_specs.SAMPLER_OPTIONS[name]['type'] != 'float' else 7.0
             for name, key in _option_specs.sampler_option_keys()}
    config.write_text(__import__('json').dumps(given))
    seen = {}

    def run(options):
        seen.update(options)
        return {'recorded': True, 'mid_change': False}, []
    monkeypatch.setattr(script['_sample_once'], 'run', run)
    assert script['main'](['--config', str(config)]) == 0
    assert seen == {name: given[key] for name, key in _option_specs.sampler_option_keys()}


# Issue 35: NaN passed every range (each comparison is false) and failed later; inf overflowed or waited for ever.
@pytest.mark.parametrize('name,value,rule', [
    ('memory_headroom_percent', 'nan', 'must be a finite number, not nan'),
    ('memory_headroom_percent', float('nan'), 'must be a finite number, not nan'),
    ('memory_headroom_percent', 'inf', 'must be a finite number, not inf'),
    ('cpu_headroom_percent', '1e999', 'must be a finite number, not inf'),
    ('lock_timeout', float('inf'), 'must be a finite number, not inf'),
    ('sample_seconds', 'Infinity', 'must be a finite number, not inf'),
    ('max_pods', float('inf'), 'must be a number (int)'),
])
def test_nan_and_infinities_are_refused_by_name(name, value, rule):
    problems = _option_specs.check({name: value})
    assert len(problems) == 1 and rule in problems[0], problems


def test_the_on_node_steps_own_timeouts_refuse_infinity():
    problems = _option_specs.check({'node_lock_timeout': float('inf'), 'config_lock_timeout': 30.0},
                                   table=_option_specs.STEP_OPTIONS)
    assert problems == ["node_lock_timeout: inf must be a finite number, not inf"]


@pytest.mark.parametrize('value,expected', [
    (104857600, 104857600), ('104857600', 104857600), ('256Mi', 256 << 20), ('1G', 10 ** 9), ('0', 0),
    ('1.5Ki', 1536), (' 64Mi ', 64 << 20),
])
def test_a_memory_option_takes_bytes_or_a_quantity(value, expected):
    assert _option_specs.quantity_bytes(value) == expected
    assert _option_specs.check({'reservations_memory_headroom_min_bytes': value,
                                'reservations_change_threshold_min_bytes': value}, 'reservations_') == []


@pytest.mark.parametrize('value', ['lots', '-1Mi', -5, True, '100 MiB'])
def test_a_memory_option_refuses_what_is_neither(value):
    assert _option_specs.check({'reservations_memory_headroom_min_bytes': value}, 'reservations_') == [
        'reservations_memory_headroom_min_bytes: %r must be bytes (104857600) or a Kubernetes quantity (100Mi, 1Gi, '
        '500M), not negative' % (value,)]


def test_every_option_named_in_bytes_takes_a_quantity():
    assert {name for name in OPTIONS if name.endswith('_bytes')} == _option_specs.QUANTITY_BYTES_OPTIONS


def test_the_policy_reads_a_quantity_as_its_bytes():
    small = {'mem_total_bytes': 8 << 30, 'mem_available_bytes': (8 << 30) - (10 << 20),
             'kubepods_working_set_bytes': 0, 'kube_components_working_set_bytes': 0, 'capacity_millicores': 2000,
             'non_pod_millicores': 10, 'kube_components_millicores': 0}
    percent = {'memory_headroom_rule': 'percent', 'min_reserved': '0'}  # the floor alone decides the headroom
    as_quantity = _recommend.recommend(small, dict(percent, memory_headroom_min_bytes='1Gi'))
    as_bytes = _recommend.recommend(small, dict(percent, memory_headroom_min_bytes=1 << 30))
    assert as_quantity['memory_headroom_bytes'] == as_bytes['memory_headroom_bytes'] == 1 << 30
    recommendation = {'kube_reserved': {'memory': '0'}, 'system_reserved': {'memory': '1100Mi', 'cpu': '100m'}}
    current = {'system_reserved': {'memory': '1000Mi', 'cpu': '100m'}}
    assert _decision.decide(current, recommendation, {'change_threshold_min_bytes': '128Mi'})['memory']['action'] \
        == _decision.decide(current, recommendation, {'change_threshold_min_bytes': 128 << 20})['memory']['action'] \
        == 'keep'


def test_the_roles_argument_spec_documents_each_option_once_and_every_entry_point_takes_them_all():
    path = os.path.join(ROLE, 'meta', 'argument_specs.yml')
    with open(path) as stream:
        text = stream.read()
    specs = yaml.safe_load(text)['argument_specs']
    options = specs['main']['options']
    # Each option's key appears once in the file: the entry points reference main's options (a YAML alias).
    for variable in options:
        assert len(re.findall(r'^ +%s:$' % re.escape(variable), text, re.M)) == 1, variable
    for entry_point, spec in specs.items():
        if entry_point != 'check_options':  # it takes none on purpose: it checks them all itself
            assert spec['options'] == options, entry_point


@pytest.mark.parametrize('name, value, words', [
    ('prometheus_bearer_token', 'tok-secret\n', 'must not contain control characters'),
    ('prometheus_bearer_token', ' tok-secret', 'surrounding whitespace'),
    ('prometheus_password', 'pw-secret\r\nX-Evil: 1', 'must not contain control characters'),
    ('prometheus_username', 'bob\n', 'must not contain control characters'),
    ('prometheus_password', 'pw\x9b-secret', 'must not contain control characters'),  # C1's CSI: a terminal escape
    ('prometheus_url', 'http://bob:pw-secret@prom:9090', 'must not hold a user name or password'),
])
def test_a_credential_refused_by_the_option_check_is_never_shown(name, value, words):
    # Issue 44: a token with a trailing newline was echoed in the job output; a password in the URL too.
    problems = _option_specs.check({'reservations_' + name: value}, 'reservations_')
    assert len(problems) == 1 and words in problems[0], problems
    assert 'secret' not in problems[0]


def test_the_secret_options_are_the_credentials():
    assert sorted(name for name, option in OPTIONS.items() if option.get('secret')) == [
        'prometheus_bearer_token', 'prometheus_password']
