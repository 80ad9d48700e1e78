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
    hosts = dict(HOSTS, b1=dict(HOSTS['b1'], node_class='General Purpose'),
                 a1=dict(HOSTS['a1'], node_class='General Purpose'))
    classes = nt.class_recommendations(hosts)
    assert classes['General Purpose']['hosts'] == ['a1', 'b1']
    assert classes['16gib-4cpu']['hosts'] == ['a2']
    assert {item['path'].split('/')[0] for item in nt.render(hosts)} == {'general-purpose', '16gib-4cpu'}


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


def test_to_yaml_round_trips_through_a_yaml_parser():
    yaml = pytest.importorskip('yaml')
    document = {'a': {'b': ['x', {'c': 'multi\nline\n', 'd': '0644'}]}, 'e': {}, 'f': 'plain'}
    assert yaml.safe_load('\n'.join(nt.to_yaml(document))) == document


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


def class_template(used=True, reason=None):
    """_gather.class_template's answer for a node of the nodepool 'batch' (two gone nodes and this one)."""
    return {'class': 'batch', 'label': 'label_karpenter_sh_nodepool', 'members': ['gone-1', 'gone-2', 'new'],
            'nodes': 3, 'span_seconds': 13.5 * 86400, 'covered_seconds': 6 * 86400, 'window_seconds': 14 * 86400,
            'used': used, 'reason': reason, 'problems': [],
            'recommendation': {'kube_reserved': {'cpu': '70m', 'memory': '400Mi'},
                               'system_reserved': {'cpu': '90m', 'memory': '1500Mi'}} if used else None}


def test_a_class_history_from_prometheus_names_the_class_gives_the_figures_and_says_nodes_and_days():
    new = dict(facts('300Mi', '40m', '200Mi', '50m', node_class=(8, 2)), class_template=class_template())
    classes = nt.class_recommendations({'new': {'facts': new, 'node_class': 'ignored-by-the-label'}})
    assert list(classes) == ['batch']
    assert classes['batch']['system_reserved'] == {'cpu': '90m', 'memory': '1500Mi'}
    content = nt.render({'new': {'facts': new, 'node_class': None}})[0]['content']
    assert ('# History: Prometheus, 3 nodes of label_karpenter_sh_nodepool="batch" over 13.5 days (6.0 days with a '
            'reading; window 14.0 days), gone nodes included.') in content


def test_a_class_history_not_used_leaves_the_nodes_own_figures_and_says_why():
    new = dict(facts('300Mi', '40m', '200Mi', '50m', node_class=(8, 2)),
               class_template=class_template(used=False, reason='no series for node class batch'))
    classes = nt.class_recommendations({'new': {'facts': new, 'node_class': None}})
    assert classes['batch']['system_reserved'] == {'cpu': '50m', 'memory': '200Mi'}
    content = nt.render({'new': {'facts': new, 'node_class': None}})[0]['content']
    assert "# History: each node's own; the class history from Prometheus is not used: no series" in content
    assert "# History: each node's own (no class history from Prometheus)." in nt.render(HOSTS)[0]['content']
