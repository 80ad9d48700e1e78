"""_node_templates: the class recommendation, and each template form valid against its project's schema."""

from __future__ import annotations

import json

import jsonschema
import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _node_templates as nt
from helpers import templates

GIB = 1 << 30


def facts(kube_memory, kube_cpu, system_memory, system_cpu, node_class=(16, 4), eviction='100Mi'):
    """A node_reservation_facts result, only the parts templates read."""
    return {'recommendation': {'kube_reserved': {'cpu': kube_cpu, 'memory': kube_memory},
                               'system_reserved': {'cpu': system_cpu, 'memory': system_memory}},
            'class_record': {'node_class': list(node_class)},
            'current': {'eviction_hard': {'memory.available': eviction}},
            'memory': {'mem_total_bytes': node_class[0] * GIB}}


HOSTS = {
    'a1': {'facts': facts('900Mi', '80m', '1Gi', '100m'), 'node_class': None},
    'a2': {'facts': facts('1200Mi', '60m', '512Mi', '250m', eviction='5%'), 'node_class': None},
    'b1': {'facts': facts('300Mi', '40m', '200Mi', '50m', node_class=(4, 2)), 'node_class': None},
    'down': {'facts': {'failed': True, 'msg': 'unreachable'}, 'node_class': None},
}


def test_the_class_recommendation_is_the_largest_of_its_nodes_resource_by_resource():
    classes = nt.class_recommendations(HOSTS)
    assert sorted(classes) == ['16gib-4cpu', '4gib-2cpu']
    big = classes['16gib-4cpu']
    assert big['hosts'] == ['a1', 'a2']
    assert big['kube_reserved'] == {'memory': '1200Mi', 'cpu': '80m'}
    assert big['system_reserved'] == {'memory': '1Gi', 'cpu': '250m'}
    # 5 % of 16 GiB (819.2 MiB) is more than 100Mi.
    assert big['eviction_hard'] == {'memory.available': '5%'}
    assert big['from'] == {'kube_reserved.memory': 'a2', 'kube_reserved.cpu': 'a1', 'system_reserved.memory': 'a1',
                           'system_reserved.cpu': 'a2', 'eviction_hard.memory.available': 'a2'}


def test_an_inventory_class_name_groups_nodes_of_any_size():
    hosts = dict(HOSTS, b1=dict(HOSTS['b1'], node_class='general-purpose'),
                 a1=dict(HOSTS['a1'], node_class='general-purpose'))
    classes = nt.class_recommendations(hosts)
    assert classes['general-purpose']['hosts'] == ['a1', 'b1']
    assert classes['16gib-4cpu']['hosts'] == ['a2']
    assert {item['path'].split('/')[0] for item in nt.render(hosts)} == {'general-purpose', '16gib-4cpu'}


def test_a_class_name_that_is_no_label_value_groups_the_report_but_names_no_file():
    # Issue 44: a class name becomes a directory and a header; one that is not a Kubernetes label value ('General
    # Purpose' has a space) is grouped as given where it names nothing (the report's fleet view, pooling), and its
    # nodes' templates are written under their size class, whose header says why.
    hosts = dict(HOSTS, b1=dict(HOSTS['b1'], node_class='General Purpose'),
                 a1=dict(HOSTS['a1'], node_class='General Purpose'))
    assert nt.class_recommendations(hosts)['General Purpose']['hosts'] == ['a1', 'b1']
    rendered = nt.render(hosts)
    assert {item['path'].split('/')[0] for item in rendered} == {'4gib-2cpu', '16gib-4cpu'}
    drop_in = next(item['content'] for item in rendered if item['path'] == '16gib-4cpu/50-nodealloc.conf')
    assert ("# Here by its size class: a1 (its class 'General Purpose' is not a Kubernetes label value"
            in drop_in) and 'for class 16gib-4cpu (2 nodes: a1, a2)' in drop_in


def test_five_forms_per_class_each_valid_against_its_schema():
    rendered = nt.render(HOSTS)
    assert sorted(item['path'] for item in rendered) == sorted(
        '%s/%s' % (cls, name) for cls in ('16gib-4cpu', '4gib-2cpu') for name in nt.FILES)
    for item in rendered:
        templates.validate(item['path'].split('/', 1)[1], item['content'])


def test_each_form_carries_the_class_values_where_its_tool_reads_them():
    docs = {item['path']: templates.validate(item['path'].split('/', 1)[1], item['content'])
            for item in nt.render(HOSTS) if item['class'] == '16gib-4cpu'}
    kubelet = {'kubeReserved': {'memory': '1200Mi', 'cpu': '80m'}, 'systemReserved': {'memory': '1Gi', 'cpu': '250m'},
               'evictionHard': {'memory.available': '5%'}}
    assert docs['16gib-4cpu/karpenter-ec2nodeclass-patch.yaml'] == {'spec': {'kubelet': kubelet}}
    assert docs['16gib-4cpu/eks-nodeadm-nodeconfig.yaml']['spec']['kubelet']['config'] == kubelet
    drop_in = docs['16gib-4cpu/50-nodealloc.conf']
    assert {k: v for k, v in drop_in.items() if k not in ('apiVersion', 'kind')} == kubelet
    capi = docs['16gib-4cpu/capi-kubeadmconfigtemplate-patch.yaml']['spec']['template']['spec']
    assert capi['files'][0]['path'] == '/etc/kubernetes/patches/kubeletconfiguration0+strategic.json'
    assert json.loads(capi['files'][0]['content']) == drop_in
    assert capi['joinConfiguration'] == {'patches': {'directory': '/etc/kubernetes/patches'}}
    # Gardener has one reservation: kube + system (1200Mi + 1Gi = 2224Mi, 80m + 250m = 330m).
    assert docs['16gib-4cpu/gardener-worker-kubelet.yaml'] == {
        'kubernetes': {'kubelet': {'kubeReserved': {'cpu': '330m', 'memory': '2224Mi'},
                                   'evictionHard': {'memoryAvailable': '5%'}}}}


@pytest.mark.parametrize('file_name,document', [
    # What the schemas exist to catch: each is a plausible mistake its tool would refuse or drop.
    ('gardener-worker-kubelet.yaml', {'kubernetes': {'kubelet': {'systemReserved': {'memory': '1Gi'}}}}),
    ('gardener-worker-kubelet.yaml', {'kubernetes': {'kubelet': {'evictionHard': {'memory.available': '100Mi'}}}}),
    ('karpenter-ec2nodeclass-patch.yaml', {'spec': {'kubelet': {'kubeReserved': {'gpu': '1'}}}}),
    ('karpenter-ec2nodeclass-patch.yaml', {'spec': {'kubelet': {'kubeReserved': {'memory': 'lots'}}}}),
    ('eks-nodeadm-nodeconfig.yaml', {'apiVersion': 'node.eks.aws/v1', 'kind': 'NodeConfig', 'spec': {}}),
    ('capi-kubeadmconfigtemplate-patch.yaml', {'apiVersion': 'bootstrap.cluster.x-k8s.io/v1beta2',
                                               'kind': 'KubeadmConfigTemplate', 'metadata': {},
                                               'spec': {'template': {'spec': {'files': [{'content': 'x'}]}}}}),
    ('50-nodealloc.conf', {'kubeReserved': {'memory': '1Gi'}}),
])
def test_the_schemas_refuse_what_the_tools_would(file_name, document):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, templates.schema(templates.SCHEMA_OF[file_name]))


def test_a_node_without_a_recommendation_makes_no_class():
    assert nt.render({'down': HOSTS['down']}) == []


def test_yaml_text_round_trips_through_a_yaml_parser_keeping_the_key_order():
    yaml = pytest.importorskip('yaml')
    document = {'z': {'b': ['x', {'c': 'multi\nline\n', 'd': '0644'}]}, 'e': {}, 'f': 'plain', 'a': '1',
                'k\nx: y': 'v\n#: w', 'n': '  leading and trailing  \n'}
    text = nt.yaml_text(document)
    assert yaml.safe_load(text) == document and list(yaml.safe_load(text)) == list(document)
    assert "c: |\n" in text  # the Cluster API patch's JSON stays a literal block a person can read


def test_only_nodes_with_a_kubelet_make_a_template():
    bare = facts('0', '0', '3Gi', '900m', node_class=(4, 2))
    bare.pop('current')  # measured on a machine without a kubelet (no config, no process)
    hosts = dict(HOSTS, bare=dict(facts=bare, node_class=None),
                 lone=dict(facts=dict(bare, class_record={'node_class': [2, 1]}), node_class=None))
    classes = nt.class_recommendations(hosts)
    assert classes['4gib-2cpu']['hosts'] == ['b1'] and classes['4gib-2cpu']['not_used'] == ['bare']
    assert classes['4gib-2cpu']['system_reserved'] == {'memory': '200Mi', 'cpu': '50m'}  # not bare's 3Gi
    assert '2gib-1cpu' not in classes and not any(item['class'] == '2gib-1cpu' for item in nt.render(hosts))
    assert 'no node of the class runs a kubelet' in nt.classes_without_template(hosts)['2gib-1cpu']
    assert '# Not used (no kubelet found): bare.' in next(
        item['content'] for item in nt.render(hosts) if item['path'] == '4gib-2cpu/50-nodealloc.conf')


def test_kube_reserved_zero_from_no_process_found_is_not_written():
    unmeasured = dict(facts('0', '0', '1Gi', '100m'), components=[])  # k3s: the kubelet runs inside another binary
    classes = nt.class_recommendations({'k3s': {'facts': unmeasured, 'node_class': None}})
    assert classes['16gib-4cpu']['kube_reserved'] == {}
    drop_in = next(item['content'] for item in nt.render({'k3s': {'facts': unmeasured, 'node_class': None}})
                   if item['path'].endswith('50-nodealloc.conf'))
    assert 'kubeReserved' not in drop_in and 'systemReserved' in drop_in and 'evictionHard' in drop_in


def test_the_cluster_api_file_names_the_kubelet_extra_args_precedence():
    capi = next(item['content'] for item in nt.render(HOSTS) if item['path'] == '16gib-4cpu/' + nt.FILES[1])
    assert 'kubeletExtraArgs' in capi and '--eviction-hard' in capi


DEFAULT_1_35 = {'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%',
                'imagefs.available': '15%', 'imagefs.inodesFree': '5%'}


def _with_eviction(eviction_hard, **kwargs):
    node = facts('900Mi', '80m', '1Gi', '100m', **kwargs)
    node['current'] = {'eviction_hard': eviction_hard}
    return node


def test_every_template_carries_every_threshold_the_class_runs_with():
    # A node on the kubelet's default (its facts hold the full map): a template naming memory.available alone would
    # turn nodefs, imagefs and the inode thresholds off on every node made from it.
    node = _with_eviction(dict(DEFAULT_1_35))
    rendered = nt.render({'n1': {'facts': node, 'node_class': None}})
    docs = {item['path'].split('/', 1)[1]: templates.validate(item['path'].split('/', 1)[1], item['content'])
            for item in rendered}
    assert docs['50-nodealloc.conf']['evictionHard'] == DEFAULT_1_35
    assert json.loads(docs['capi-kubeadmconfigtemplate-patch.yaml']['spec']['template']['spec']['files'][0]
                      ['content'])['evictionHard'] == DEFAULT_1_35
    assert docs['eks-nodeadm-nodeconfig.yaml']['spec']['kubelet']['config']['evictionHard'] == DEFAULT_1_35
    assert docs['karpenter-ec2nodeclass-patch.yaml']['spec']['kubelet']['evictionHard'] == DEFAULT_1_35
    assert docs['gardener-worker-kubelet.yaml']['kubernetes']['kubelet']['evictionHard'] == {
        'memoryAvailable': '100Mi', 'nodeFSAvailable': '10%', 'nodeFSInodesFree': '5%', 'imageFSAvailable': '15%',
        'imageFSInodesFree': '5%'}


def test_a_node_without_a_config_runs_the_default_of_its_kubelet_version():
    node = facts('900Mi', '80m', '1Gi', '100m')
    del node['current']
    node['kubelet'] = {'pid': 1, 'version': {'version': '1.29.3'}}  # before 1.30: no imagefs.inodesFree default
    summary = nt.class_recommendations({'old': {'facts': node, 'node_class': None}})['16gib-4cpu']
    assert summary['eviction_hard'] == {k: v for k, v in DEFAULT_1_35.items() if k != 'imagefs.inodesFree'}


def test_each_signal_is_the_largest_of_the_class_and_names_its_node():
    hosts = {'a': {'facts': _with_eviction(dict(DEFAULT_1_35)), 'node_class': None},
             'b': {'facts': _with_eviction({'memory.available': '2%', 'nodefs.available': '20%',
                                            'imagefs.available': '0%', 'containerfs.available': '10%'}),
                   'node_class': None}}
    summary = nt.class_recommendations(hosts)['16gib-4cpu']
    # 2 % of 16 GiB is 327 MiB > 100Mi; '0%' turns imagefs.available off on b: a's 15 % is kept.
    assert summary['eviction_hard'] == dict(DEFAULT_1_35, **{'memory.available': '2%', 'nodefs.available': '20%',
                                                             'containerfs.available': '10%'})
    assert {key: host for key, host in summary['from'].items() if key.startswith('eviction_hard.')} == {
        'eviction_hard.memory.available': 'b', 'eviction_hard.nodefs.available': 'b',
        'eviction_hard.nodefs.inodesFree': 'a', 'eviction_hard.imagefs.available': 'a',
        'eviction_hard.imagefs.inodesFree': 'a', 'eviction_hard.containerfs.available': 'b'}
    rendered = {item['path'].split('/', 1)[1]: item['content'] for item in nt.render(hosts)}
    for file_name, content in rendered.items():
        document = templates.validate(file_name, content)
        if file_name in ('karpenter-ec2nodeclass-patch.yaml', 'gardener-worker-kubelet.yaml', 'bottlerocket-settings.toml',
                         'aks-agentpool-kubeletconfig.yaml'):
            # None of these tools has a containerfs field (AKS none for eviction): said in the header, left out.
            assert '# Not expressible here' in content and 'containerfs.available' not in json.dumps(document)
        else:
            assert 'containerfs.available' in json.dumps(document)


def test_the_class_record_s_name_is_the_template_class_without_an_inventory_map():
    node = dict(facts('900Mi', '80m', '1Gi', '100m'), class_record={'node_class': [16, 4], 'class_name': 'gpu'})
    assert nt.class_name(None, node) == 'gpu'
    assert nt.class_name('override', node) == 'override'
    assert nt.class_name(None, facts('1', '1m', '1', '1m')) == '16gib-4cpu'


def class_template(used=True, reason=None):
    """_gather.class_template's answer for a node of the nodepool 'batch' (two gone nodes and this one)."""
    return {'class': 'batch', 'label': 'label_karpenter_sh_nodepool', 'members': ['gone-1', 'gone-2', 'new'],
            'nodes': 3, 'span_seconds': 13.5 * 86400, 'covered_seconds': 6 * 86400, 'window_seconds': 14 * 86400,
            'used': used, 'reason': reason, 'problems': [],
            'recommendation': {'kube_reserved': {'cpu': '70m', 'memory': '400Mi'},
                               'system_reserved': {'cpu': '90m', 'memory': '1500Mi'}} if used else None}


def test_a_class_history_from_prometheus_names_the_class_gives_the_figures_and_says_nodes_and_days():
    new = dict(facts('300Mi', '40m', '200Mi', '50m', node_class=(8, 2)), class_template=class_template())
    classes = nt.class_recommendations({'new': {'facts': new, 'node_class': None}})
    assert list(classes) == ['batch']
    assert classes['batch']['system_reserved'] == {'cpu': '90m', 'memory': '1500Mi'}
    content = nt.render({'new': {'facts': new, 'node_class': None}})[0]['content']
    assert ('# History: Prometheus, 3 nodes of label_karpenter_sh_nodepool="batch" over 13.5 days (6.0 days with a '
            'reading; window 14.0 days), gone nodes included.') in content


def test_the_inventorys_class_wins_over_the_label_so_pooling_the_report_and_the_templates_agree():
    # Issue 37: one node class for pooling, the HTML and the templates: the inventory's nodealloc_node_class where
    # set. Pooling and the report do not read Prometheus' label, so a template named after it would disagree with them.
    new = dict(facts('300Mi', '40m', '200Mi', '50m', node_class=(8, 2)), class_template=class_template())
    assert list(nt.class_recommendations({'new': {'facts': new, 'node_class': 'gpu'}})) == ['gpu']


def test_a_class_history_not_used_leaves_the_nodes_own_figures_and_says_why():
    new = dict(facts('300Mi', '40m', '200Mi', '50m', node_class=(8, 2)),
               class_template=class_template(used=False, reason='no series for node class batch'))
    classes = nt.class_recommendations({'new': {'facts': new, 'node_class': None}})
    assert classes['batch']['system_reserved'] == {'cpu': '50m', 'memory': '200Mi'}
    content = nt.render({'new': {'facts': new, 'node_class': None}})[0]['content']
    assert "# History: each node's own; the class history from Prometheus is not used: no series" in content
    assert "# History: each node's own (no class history from Prometheus)." in nt.render(HOSTS)[0]['content']


def control_plane(node_facts):
    return dict(node_facts, class_record=dict(node_facts['class_record'], control_plane=True))


def test_a_control_plane_node_has_a_class_of_its_own_in_the_templates():
    # cp1 is of a1's and a2's size and would carry its 4 GiB systemReserved into their template without its own class.
    hosts = dict(HOSTS, cp1={'facts': control_plane(facts('600Mi', '100m', '4Gi', '500m')), 'node_class': None})
    classes = nt.class_recommendations(hosts)
    assert sorted(classes) == ['16gib-4cpu', '4gib-2cpu', 'control-plane-16gib-4cpu']
    assert classes['16gib-4cpu']['hosts'] == ['a1', 'a2'] and classes['16gib-4cpu']['system_reserved']['memory'] == '1Gi'
    assert classes['control-plane-16gib-4cpu']['hosts'] == ['cp1']
    assert classes['control-plane-16gib-4cpu']['system_reserved'] == {'memory': '4Gi', 'cpu': '500m'}
    assert {item['path'].split('/')[0] for item in nt.render(hosts)} == {'16gib-4cpu', '4gib-2cpu',
                                                                         'control-plane-16gib-4cpu'}


def test_a_named_control_plane_class_is_prefixed_and_one_too_long_for_a_label_falls_to_its_size_class():
    node = control_plane(facts('900Mi', '80m', '1Gi', '100m'))
    assert nt.class_name('general', node) == 'control-plane-general'
    assert nt.class_name(None, dict(node, class_record=dict(node['class_record'], class_name='gpu'))) == 'control-plane-gpu'
    assert nt.class_name(None, dict(node, class_template={'class': 'pool-a'})) == 'control-plane-pool-a'
    assert nt.size_class_name(node) == 'control-plane-16gib-4cpu'
    hosts = {'cp1': {'facts': node, 'node_class': 'x' * 50}, 'w1': {'facts': facts('1', '1m', '1', '1m'), 'node_class': 'x' * 50}}
    placed, moved = nt.placed(hosts)
    assert placed['cp1']['node_class'] == 'control-plane-16gib-4cpu' and 'not a Kubernetes label value' in moved['cp1']
    assert placed['w1']['node_class'] == 'x' * 50 and 'w1' not in moved


def test_a_report_node_keeps_its_control_plane_class():
    node = {'status': 'ok', 'node_class': [16, 4], 'control_plane': True, 'recommended': {}}
    assert nt.class_name(None, nt.facts_of_report_node(node)) == 'control-plane-16gib-4cpu'
    assert nt.class_name(None, nt.facts_of_report_node(dict(node, control_plane=False))) == '16gib-4cpu'


def _with_max_pods(host, count, source='kubelet'):
    entry = HOSTS[host]
    return dict(entry, facts=dict(entry['facts'], class_record=dict(entry['facts']['class_record'], max_pods=count,
                                                                    max_pods_source=source)))


# Issue 45 item 5: the templates carry the maxPods their reservation is sized for, where the class's nodes share one.
MAX_PODS_AT = {
    'karpenter-ec2nodeclass-patch.yaml': lambda doc: doc['spec']['kubelet'].get('maxPods'),
    'eks-nodeadm-nodeconfig.yaml': lambda doc: doc['spec']['kubelet']['config'].get('maxPods'),
    '50-nodealloc.conf': lambda doc: doc.get('maxPods'),
    'capi-kubeadmconfigtemplate-patch.yaml':
        lambda doc: json.loads(doc['spec']['template']['spec']['files'][0]['content']).get('maxPods'),
    'gardener-worker-kubelet.yaml': lambda doc: doc['kubernetes']['kubelet'].get('maxPods'),
    'bottlerocket-settings.toml': lambda doc: doc['settings']['kubernetes'].get('max-pods'),
    'talos-machineconfig-patch.yaml': lambda doc: doc['machine']['kubelet']['extraConfig'].get('maxPods'),
    'openshift-kubeletconfig.yaml': lambda doc: doc['spec']['kubeletConfig'].get('maxPods'),
    'aks-agentpool-kubeletconfig.yaml': lambda doc: doc['properties']['kubeletConfig'].get('maxPods'),
}


def _class_files(hosts, name):
    return {item['path'].split('/', 1)[1]: item for item in nt.render(hosts) if item['class'] == name}


def test_a_class_whose_nodes_share_a_max_pods_gets_it_in_every_form_that_takes_one():
    hosts = dict(HOSTS, a1=_with_max_pods('a1', 58), a2=_with_max_pods('a2', 58))
    summary = nt.class_recommendations(hosts)['16gib-4cpu']
    assert (summary['max_pods'], summary['max_pods_seen']) == (58, {58: 2})
    files = _class_files(hosts, '16gib-4cpu')
    assert sorted(files) == sorted(MAX_PODS_AT)
    for file_name, item in files.items():
        document = templates.validate(file_name, item['content'])
        # AKS sets maxPods on the agent pool, when it is created: never in kubeletConfig.
        assert MAX_PODS_AT[file_name](document) == (None if file_name == 'aks-agentpool-kubeletconfig.yaml' else 58)
    assert '# maxPods 58, as each of these nodes runs with' in files['50-nodealloc.conf']['content']
    assert 'over a kubelet.maxPodsExpression' in files['eks-nodeadm-nodeconfig.yaml']['content']
    assert "AKS takes it as the agent pool's properties.maxPods" in files['aks-agentpool-kubeletconfig.yaml']['content']
    assert 'sized for the maxPods its nodes run with: maxPods 58 (2 nodes).' in files['aks-agentpool-kubeletconfig.yaml']['content']


@pytest.mark.parametrize('counts,seen_text', [
    ((29, 58), 'its nodes run with maxPods 29 (1 node), maxPods 58 (1 node)'),
    # one node gave none: not known to be shared
    ((58, None), "its nodes run with maxPods 58 (1 node), 1 node whose maxPods was not read (the kubelet's 110 assumed)"),
    # a record past any real maxPods is not one
    ((58, 5000), "its nodes run with maxPods 58 (1 node), 1 node whose maxPods was not read (the kubelet's 110 assumed)"),
    ((58, True), "its nodes run with maxPods 58 (1 node), 1 node whose maxPods was not read (the kubelet's 110 assumed)"),
    ((None, None), "its nodes run with 2 nodes whose maxPods was not read (the kubelet's 110 assumed)"),
])
def test_no_max_pods_is_written_unless_every_node_of_the_class_gives_the_same(counts, seen_text):
    hosts = dict(HOSTS, a1=_with_max_pods('a1', counts[0]), a2=_with_max_pods('a2', counts[1]))
    assert nt.class_recommendations(hosts)['16gib-4cpu']['max_pods'] is None
    for file_name, item in _class_files(hosts, '16gib-4cpu').items():
        assert MAX_PODS_AT[file_name](templates.validate(file_name, item['content'])) is None
        if file_name != 'aks-agentpool-kubeletconfig.yaml':
            assert '# maxPods is not set here: %s;' % seen_text in item['content']


def test_the_schemas_take_max_pods_only_as_a_whole_number():
    assert templates.schema_fails('karpenter-ec2nodeclass-patch.yaml', {'spec': {'kubelet': {'maxPods': 58}}}) is None
    assert templates.schema_fails('karpenter-ec2nodeclass-patch.yaml', {'spec': {'kubelet': {'maxPods': '58'}}})
    assert templates.schema_fails('50-nodealloc.conf', {'apiVersion': 'kubelet.config.k8s.io/v1beta1',
                                                        'kind': 'KubeletConfiguration', 'maxPods': 1.5})
    assert templates.schema_fails('gardener-worker-kubelet.yaml', {'kubernetes': {'kubelet': {'maxPods': 'many'}}})
    assert templates.schema_fails('bottlerocket-settings.toml', {'settings': {'kubernetes': {'max-pods': -1}}})


def test_a_class_of_several_sizes_gets_a_karpenter_file_per_size_with_that_size_s_own_figures():
    # Issue 45 item 5: a NodePool of several instance sizes. Karpenter applies one kubeReserved per EC2NodeClass; the
    # class's file carries the largest of every node, and one file per size carries that size's nodes alone.
    hosts = {'a1': dict(_with_max_pods('a1', 58), node_class='pool'),
             'a2': dict(_with_max_pods('a2', 58), node_class='pool'),
             'b1': dict(HOSTS['b1'], node_class='pool',
                        facts=dict(HOSTS['b1']['facts'], class_record={'node_class': [4, 2], 'max_pods': 29,
                                                                       'max_pods_source': 'kubelet'}))}
    summary = nt.class_recommendations(hosts)['pool']
    assert summary['sizes'] == {'16gib-4cpu': ['a1', 'a2'], '4gib-2cpu': ['b1']} and summary['max_pods'] is None
    files = _class_files(hosts, 'pool')
    per_size = {path: item for path, item in files.items() if path not in nt.FILES}
    assert sorted(per_size) == ['karpenter-ec2nodeclass-patch-16gib-4cpu.yaml', 'karpenter-ec2nodeclass-patch-4gib-2cpu.yaml']
    small = templates.validate(per_size['karpenter-ec2nodeclass-patch-4gib-2cpu.yaml']['form'],
                               per_size['karpenter-ec2nodeclass-patch-4gib-2cpu.yaml']['content'])
    assert small == {'spec': {'kubelet': {'kubeReserved': {'cpu': '40m', 'memory': '300Mi'},
                                          'systemReserved': {'cpu': '50m', 'memory': '200Mi'},
                                          'evictionHard': {'memory.available': '100Mi'}, 'maxPods': 29}}}
    large = templates.validate(nt.KARPENTER, per_size['karpenter-ec2nodeclass-patch-16gib-4cpu.yaml']['content'])
    assert large['spec']['kubelet']['kubeReserved'] == {'cpu': '80m', 'memory': '1200Mi'}
    assert large['spec']['kubelet']['maxPods'] == 58
    # The class's own file: the largest of all, no maxPods (29 and 58), and the per-size files named in its header.
    whole = templates.validate(nt.KARPENTER, files[nt.KARPENTER]['content'])
    assert whole['spec']['kubelet']['kubeReserved'] == {'cpu': '80m', 'memory': '1200Mi'}
    assert 'maxPods' not in whole['spec']['kubelet']
    assert ('# The class mixes sizes (16gib-4cpu, 4gib-2cpu): this file carries the largest of them.'
            in files[nt.KARPENTER]['content'])
    assert 'karpenter-ec2nodeclass-patch-4gib-2cpu.yaml' in files[nt.KARPENTER]['content']
    assert per_size['karpenter-ec2nodeclass-patch-4gib-2cpu.yaml']['content'].startswith(
        '# nodealloc.kubelet node template for the 4gib-2cpu nodes of class pool (1 nodes: b1).')
    # Only Karpenter's form is split: a NodePool is where one template most often spans instance sizes.
    assert all(item['form'] == nt.KARPENTER for item in per_size.values())
    # A class of one size has no per-size file.
    assert not nt.class_recommendations(HOSTS)['16gib-4cpu']['sizes']
    assert sorted(_class_files(HOSTS, '16gib-4cpu')) == sorted(nt.FILES)


def test_an_assumed_max_pods_is_never_written():
    # Review of issue 45: a kubelet whose maxPods this module did not read (a flag it does not parse, a config it could
    # not open) was sized at the default 110; writing that 110 would raise its pods past its network's addresses.
    hosts = dict(HOSTS, a1=_with_max_pods('a1', 110, 'default'), a2=_with_max_pods('a2', 110, 'default'))
    summary = nt.class_recommendations(hosts)['16gib-4cpu']
    assert summary['max_pods'] is None and summary['max_pods_unknown'] == 2
    files = _class_files(hosts, '16gib-4cpu')
    assert all(not MAX_PODS_AT[name](templates.validate(name, item['content'])) for name, item in files.items())
    # A record of an earlier version says nothing of its source: not written either.
    old = {host: dict(entry, facts=dict(entry['facts'], class_record={'node_class': [16, 4], 'max_pods': 58}))
           for host, entry in HOSTS.items() if host in ('a1', 'a2')}
    assert nt.class_recommendations(old)['16gib-4cpu']['max_pods'] is None
    # The option given on every node is written.
    hosts = dict(HOSTS, a1=_with_max_pods('a1', 250, 'option'), a2=_with_max_pods('a2', 250, 'option'))
    assert nt.class_recommendations(hosts)['16gib-4cpu']['max_pods'] == 250


def test_the_karpenter_and_bottlerocket_headers_say_where_the_max_pods_they_set_applies():
    hosts = dict(HOSTS, a1=_with_max_pods('a1', 58), a2=_with_max_pods('a2', 58))
    files = _class_files(hosts, '16gib-4cpu')
    assert 'on every instance type the NodePool may launch' in files[nt.KARPENTER]['content']
    assert "[settings.kubernetes] table" in files['bottlerocket-settings.toml']['content']


def test_the_per_size_files_rest_on_each_size_s_own_recommendations_not_the_class_history():
    # Review of issue 45: a class history from Prometheus is the largest non-pod memory of every size of the class;
    # the 4 GiB size's file must carry its own node's figure, not the 16 GiB nodes' history.
    history = {'used': True, 'class': 'pool', 'label': 'label_pool', 'nodes': 3, 'members': ['a1', 'a2', 'b1'],
               'span_seconds': 86400 * 14, 'covered_seconds': 86400 * 14, 'window_seconds': 86400 * 14,
               'recommendation': {'kube_reserved': {'cpu': '90m', 'memory': '1500Mi'},
                                  'system_reserved': {'cpu': '300m', 'memory': '1Gi'}}}
    hosts = {host: dict(HOSTS[host], node_class='pool', facts=dict(HOSTS[host]['facts'], class_template=history))
             for host in ('a1', 'a2', 'b1')}
    files = _class_files(hosts, 'pool')
    whole = templates.validate(nt.KARPENTER, files[nt.KARPENTER]['content'])
    assert whole['spec']['kubelet']['kubeReserved']['memory'] == '1500Mi'  # the class's file: the class history
    small = files['karpenter-ec2nodeclass-patch-4gib-2cpu.yaml']
    assert small['size'] == '4gib-2cpu'
    assert templates.validate(nt.KARPENTER, small['content'])['spec']['kubelet']['kubeReserved'] == {
        'cpu': '40m', 'memory': '300Mi'}
    assert 'the class history from Prometheus mixes every size of the class' in small['content']


def test_a_control_plane_class_of_several_sizes_writes_the_per_size_files_its_header_names():
    def control_plane(host):
        entry = HOSTS[host]
        return dict(entry, node_class=None, facts=dict(entry['facts'], class_record=dict(
            entry['facts']['class_record'], control_plane=True, class_name='cp')))
    hosts = {host: control_plane(host) for host in ('a1', 'b1')}
    files = _class_files(hosts, 'control-plane-cp')
    per_size = sorted(path for path in files if path not in nt.FILES)
    assert per_size == ['karpenter-ec2nodeclass-patch-control-plane-16gib-4cpu.yaml',
                        'karpenter-ec2nodeclass-patch-control-plane-4gib-2cpu.yaml']
    for path in per_size:
        assert path in files[nt.KARPENTER]['content']


def test_a_malformed_size_names_no_file():
    # Review of issue 44/45: a record's size is a node's word; 400 digits of GiB must not become a file name.
    hosts = {'a1': dict(HOSTS['a1'], node_class='pool'),
             'b1': dict(HOSTS['b1'], node_class='pool'),
             'bad': dict(HOSTS['b1'], node_class='pool',
                         facts=dict(HOSTS['b1']['facts'], class_record={'node_class': ['1' * 400, 4]}))}
    paths = [item['path'] for item in nt.render(hosts)]
    assert all(len(path) < 120 for path in paths)
    assert sorted(path for path in paths if 'patch-' in path) == [
        'pool/karpenter-ec2nodeclass-patch-16gib-4cpu.yaml', 'pool/karpenter-ec2nodeclass-patch-4gib-2cpu.yaml']
