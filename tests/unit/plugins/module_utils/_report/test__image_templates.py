"""_image_templates through _node_templates.render: the Bottlerocket, Talos, OpenShift and AKS forms of a class, each
valid against its upstream schema (tests/unit/fixtures/template_schemas/, each citing its source and commit) and
carrying exactly the class's recommended values; and the schemas refusing what each image would refuse or drop."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _image_templates as it
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _node_templates as nt
from helpers import templates

GIB = 1 << 30


def facts(kube_memory, kube_cpu, system_memory, system_cpu, node_class=(16, 4), eviction=None):
    return {'recommendation': {'kube_reserved': {'cpu': kube_cpu, 'memory': kube_memory},
                               'system_reserved': {'cpu': system_cpu, 'memory': system_memory}},
            'class_record': {'node_class': list(node_class)},
            'current': {'eviction_hard': eviction or {'memory.available': '100Mi', 'nodefs.available': '10%'}},
            'memory': {'mem_total_bytes': node_class[0] * GIB}}


HOSTS = {
    'a1': {'facts': facts('900Mi', '80m', '1Gi', '100m'), 'node_class': 'general'},
    'a2': {'facts': facts('1200Mi', '60m', '512Mi', '250m',
                          eviction={'memory.available': '5%', 'containerfs.available': '10%'}), 'node_class': 'general'},
    'small': {'facts': facts('300Mi', '40m', '200Mi', '50m', node_class=(4, 2)), 'node_class': None},
}


def rendered(hosts=None):
    """{(class, file name): (document, content)} of the image forms, each validated against its schema."""
    out = {}
    for item in nt.render(hosts or HOSTS):
        name, file_name = item['path'].split('/', 1)
        if file_name in it.FILES:
            out[name, file_name] = (templates.validate(file_name, item['content']), item['content'])
    return out


def test_every_class_gets_the_four_image_forms_each_valid_against_its_schema():
    assert sorted(rendered()) == sorted((name, file_name) for name in ('general', '4gib-2cpu') for file_name in it.FILES)


def test_each_form_carries_exactly_the_class_recommendation():
    summary = nt.class_recommendations(HOSTS)['general']
    kube, system = summary['kube_reserved'], summary['system_reserved']
    assert kube == {'cpu': '80m', 'memory': '1200Mi'} and system == {'cpu': '250m', 'memory': '1Gi'}
    docs = {file_name: document for (name, file_name), (document, _text) in rendered().items() if name == 'general'}
    assert docs[it.BOTTLEROCKET] == {'settings': {'kubernetes': {
        'kube-reserved': kube, 'system-reserved': system,
        # Bottlerocket's eviction-hard has no containerfs key: left out (the header says so).
        'eviction-hard': {'memory.available': '5%', 'nodefs.available': '10%'}}}}
    eviction = {'memory.available': '5%', 'nodefs.available': '10%', 'containerfs.available': '10%'}
    # Talos: a systemReserved replaces Talos's own map whole; what the class has no figure for keeps Talos's value.
    assert docs[it.TALOS] == {'machine': {'kubelet': {'extraConfig': {
        'kubeReserved': kube, 'systemReserved': dict(system, pid='100', **{'ephemeral-storage': '256Mi'}),
        'evictionHard': eviction}}}}
    assert docs[it.OPENSHIFT]['spec'] == {
        'machineConfigPoolSelector': {'matchLabels': {'pools.operator.machineconfiguration.openshift.io/general': ''}},
        'autoSizingReserved': False,
        'kubeletConfig': {'kubeReserved': kube, 'systemReserved': system, 'evictionHard': eviction}}
    assert docs[it.OPENSHIFT]['metadata'] == {'name': 'general-nodealloc'}
    # AKS has one reservation: kube + system (1200Mi + 1Gi = 2224 MiB, 80m + 250m = 330m).
    assert docs[it.AKS] == {'properties': {'kubeletConfig': {'kubeReserved': {'cpuMillicores': 330, 'memoryMB': 2224}}}}


def test_headers_name_what_each_form_rests_on():
    content = {file_name: text for (name, file_name), (_document, text) in rendered().items() if name == 'general'}
    assert '11 MiB x max-pods + 255 MiB' in content[it.BOTTLEROCKET]
    assert '# Not expressible here (the tool\'s default applies): evictionHard containerfs.available.' in (
        content[it.BOTTLEROCKET])
    assert "Talos's own values kept for what the class has no figure for: ephemeral-storage 256Mi, pid 100" in (
        content[it.TALOS])
    assert 'Auto-sizing is on by default for workers since OpenShift 4.21' in content[it.OPENSHIFT]
    assert 'the role does not fight it' in content[it.OPENSHIFT]
    for text in content.values():
        assert text.startswith('# nodealloc.kubelet node template for class general (2 nodes: a1, a2).')


def test_aks_raises_a_class_below_its_minimum_and_says_why():
    # 4gib-2cpu: 300Mi + 200Mi = 500 MiB and 40m + 50m = 90m, both below what AKS accepts (750 MiB, 140m).
    document, content = rendered()['4gib-2cpu', it.AKS]
    assert document['properties']['kubeletConfig']['kubeReserved'] == {'cpuMillicores': 140, 'memoryMB': 750}
    assert ("# kubeReserved cpuMillicores raised from the class's 90m (kube + system) to 140m: AKS refuses less than "
            "140m.") in content
    assert ("# kubeReserved memoryMB raised from the class's 500 MiB (kube + system) to 750 MiB: AKS refuses less than "
            "750 MiB.") in content
    assert 'raised' not in rendered()['general', it.AKS][1]


def test_aks_rounds_up_to_whole_mib_and_millicores():
    summary = {'kube_reserved': {'cpu': '140500u', 'memory': '800Mi'}, 'system_reserved': {'memory': '1'}}
    assert it.aks_kube_reserved(summary) == ({'cpuMillicores': 141, 'memoryMB': 801}, [])


def test_a_class_without_a_kube_reserved_figure_writes_none_and_talos_keeps_its_own_system_values():
    lone = dict(facts('0', '0', '1Gi', '100m'), components=[])  # k3s: its kubeReserved share was not measured
    files = rendered({'k3s': {'facts': lone, 'node_class': None}})
    docs = {file_name: document for (_name, file_name), (document, _text) in files.items()}
    assert 'kube-reserved' not in docs[it.BOTTLEROCKET]['settings']['kubernetes']
    assert 'kubeReserved' not in docs[it.TALOS]['machine']['kubelet']['extraConfig']
    assert 'kubeReserved' not in docs[it.OPENSHIFT]['spec']['kubeletConfig']


@pytest.mark.parametrize('file_name,document', [
    # Bottlerocket reserves cpu, memory and ephemeral-storage only (ReservedResources), in its quantity grammar.
    (it.BOTTLEROCKET, {'settings': {'kubernetes': {'kube-reserved': {'pid': '100'}}}}),
    (it.BOTTLEROCKET, {'settings': {'kubernetes': {'system-reserved': {'memory': '1 Gi'}}}}),
    (it.BOTTLEROCKET, {'settings': {'kubernetes': {'eviction-hard': {'containerfs.available': '10%'}}}}),
    (it.BOTTLEROCKET, {'settings': {'kubernetes': {'eviction-hard': {'memory.available': '100%'}}}}),
    (it.BOTTLEROCKET, {'settings': {'kubernetes': {'kube_reserved': {'memory': '1Gi'}}}}),
    # Talos refuses its protected fields in extraConfig, and a patch has no machine.kubelet.config.
    (it.TALOS, {'machine': {'kubelet': {'extraConfig': {'authentication': {}}}}}),
    (it.TALOS, {'machine': {'kubelet': {'extraConfig': {'kind': 'KubeletConfiguration'}}}}),
    (it.TALOS, {'machine': {'kubelet': {'config': {'kubeReserved': {'memory': '1Gi'}}}}}),
    (it.TALOS, {'machine': {'kubelet': {'extraConfig': {'kubeReserved': {'gpu': '1'}}}}}),
    # The machine-config operator refuses systemReserved beside autoSizingReserved: true.
    (it.OPENSHIFT, {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'KubeletConfig',
                    'metadata': {'name': 'x'}, 'spec': {'autoSizingReserved': True,
                                                        'kubeletConfig': {'systemReserved': {'memory': '1Gi'}}}}),
    (it.OPENSHIFT, {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'KubeletConfig',
                    'metadata': {'name': 'x'}, 'spec': {'autoSizingReserved': 'false'}}),
    (it.OPENSHIFT, {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'KubeletConfig',
                    'metadata': {'name': 'x'}, 'spec': {'machineConfigPoolSelector': {'matchLabels': {
                        'pools.operator.machineconfiguration.openshift.io/General Purpose': ''}}}}),
    (it.OPENSHIFT, {'apiVersion': 'machineconfiguration.openshift.io/v1', 'kind': 'KubeletConfig',
                    'metadata': {'name': 'Bad_Name'}, 'spec': {}}),
    # AKS: whole numbers, at least 140 millicores and 750 MiB, and nothing but kubeReserved.
    (it.AKS, {'properties': {'kubeletConfig': {'kubeReserved': {'cpuMillicores': 139}}}}),
    (it.AKS, {'properties': {'kubeletConfig': {'kubeReserved': {'memoryMB': 749}}}}),
    (it.AKS, {'properties': {'kubeletConfig': {'kubeReserved': {'memoryMB': '1Gi'}}}}),
    (it.AKS, {'properties': {'kubeletConfig': {'systemReserved': {'memoryMB': 800}}}}),
])
def test_the_schemas_refuse_what_the_images_would(file_name, document):
    assert templates.schema_fails(file_name, document) is not None


def test_the_schemas_accept_what_the_images_take():
    # The positive side of the refusals above, so a schema that refuses everything fails here.
    assert templates.schema_fails(it.BOTTLEROCKET, {'settings': {'kubernetes': {
        'kube-reserved': {'cpu': '80m', 'memory': '129e6', 'ephemeral-storage': '1Gi'},
        'eviction-hard': {'memory.available': '99.5%', 'pid.available': '5%'}}}}) is None
    assert templates.schema_fails(it.AKS, {'properties': {'kubeletConfig': {'kubeReserved': {
        'cpuMillicores': 140, 'memoryMB': 750}}}}) is None


@pytest.mark.parametrize('value', ['\udcff', 'lots', '100%', '5%\n[settings.kubernetes.authentication]'])
def test_a_threshold_bottlerocket_would_not_take_is_left_out_not_written(value):
    # A node's config is its own word: an undecodable byte (a lone surrogate, which TOML cannot hold) or text that is
    # no threshold stays out of the user data, and the header names the signal.
    eviction = {'memory.available': '100Mi', 'nodefs.available': value}
    hosts = {'n': {'facts': facts('900Mi', '80m', '1Gi', '100m', eviction=eviction), 'node_class': None}}
    document, content = rendered(hosts)['16gib-4cpu', it.BOTTLEROCKET]
    assert document['settings']['kubernetes']['eviction-hard'] == {'memory.available': '100Mi'}
    assert 'evictionHard nodefs.available.' in content
