"""Node templates from playbooks/recommend.yml on real nodes: an inventory with two node classes (the inventory's
nodealloc_node_class, as a fleet names its pools) gets every template form (nine) per class under
<report dir>/templates/<class>/, each valid against its project's schema (tests/helpers/templates.py), and each
carrying the largest recommendation of its class's nodes as the report gives them.
"""

from __future__ import annotations

import json
import os

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _quantity
from helpers import templates
from helpers.rollout import output_tail, run_playbook

FORMS = sorted(templates.SCHEMA_OF)


def amount(resource, text):
    value = _quantity.parse_quantity(text)
    return _quantity.milli_value(value) if resource == 'cpu' else _quantity.quantity_value(value)


def test_recommend_writes_every_valid_template_form_per_node_class(fresh_fleet, tmp_path):
    nodes = fresh_fleet['nodes'][:3]
    classes = {nodes[0]['name']: 'general', nodes[1]['name']: 'general', nodes[2]['name']: 'memory-optimized'}
    inventory = tmp_path / 'classes.yml'
    inventory.write_text(json.dumps({'all': {'hosts': {host: {'nodealloc_node_class': name}
                                                       for host, name in classes.items()}}}))
    reports = tmp_path / 'reports'
    result = run_playbook(fresh_fleet, 'playbooks/recommend.yml', '--check', '-i', str(inventory),
                          '-enodealloc_report_dir=%s' % reports, '-ereservations_sample_seconds=1',
                          '-enodealloc_hosts=%s' % ','.join(classes))
    assert result.returncode == 0, output_tail(result)
    with open(reports / 'reservations.json', encoding='utf-8') as handle:
        recommended = {node['host']: node['recommended'] for node in json.load(handle)['nodes']}
    assert sorted(os.listdir(reports / 'templates')) == ['general', 'memory-optimized']
    for class_name in ('general', 'memory-optimized'):
        directory = reports / 'templates' / class_name
        assert sorted(os.listdir(directory)) == FORMS
        documents = {form: templates.validate(form, (directory / form).read_text()) for form in FORMS}
        members = [host for host, name in classes.items() if name == class_name]
        drop_in = documents['50-nodealloc.conf']
        for field, key in (('kube_reserved', 'kubeReserved'), ('system_reserved', 'systemReserved')):
            for resource in ('cpu', 'memory'):
                values = [recommended[host][field][resource] for host in members]
                written = drop_in[key][resource]
                assert amount(resource, written) == max(amount(resource, value) for value in values), (field, values)
                assert documents['karpenter-ec2nodeclass-patch.yaml']['spec']['kubelet'][key][resource] == written
                assert documents['eks-nodeadm-nodeconfig.yaml']['spec']['kubelet']['config'][key][resource] == written
                assert documents['openshift-kubeletconfig.yaml']['spec']['kubeletConfig'][key][resource] == written
                assert documents['talos-machineconfig-patch.yaml']['machine']['kubelet']['extraConfig'][key][resource] \
                    == written
                table = 'kube-reserved' if key == 'kubeReserved' else 'system-reserved'
                assert documents['bottlerocket-settings.toml']['settings']['kubernetes'][table][resource] == written
        # Issue 45: the stand-in's config sets no maxPods and its command line no --max-pods: the reservation is sized
        # at the kubelet's 110, assumed, and no form sets maxPods (an assumed count never is written).
        assert 'maxPods' not in drop_in
        assert 'maxPods' not in documents['karpenter-ec2nodeclass-patch.yaml']['spec']['kubelet']
        assert 'max-pods' not in documents['bottlerocket-settings.toml']['settings']['kubernetes']
        assert ("2 nodes whose maxPods was not read (the kubelet's 110 assumed)" if len(members) == 2 else
                "1 node whose maxPods was not read (the kubelet's 110 assumed)") in (directory / '50-nodealloc.conf').read_text()
        capi_files = documents['capi-kubeadmconfigtemplate-patch.yaml']['spec']['template']['spec']['files']
        assert json.loads(capi_files[0]['content']) == drop_in
        assert documents['openshift-kubeletconfig.yaml']['spec']['autoSizingReserved'] is False
        # AKS takes one reservation: kube + system, whole millicores and MiB, at least 140m and 750 MiB.
        aks = documents['aks-agentpool-kubeletconfig.yaml']['properties']['kubeletConfig']['kubeReserved']
        both = {resource: sum(amount(resource, drop_in[key][resource]) for key in ('kubeReserved', 'systemReserved'))
                for resource in ('cpu', 'memory')}
        assert aks == {'cpuMillicores': max(140, both['cpu']), 'memoryMB': max(750, -(-both['memory'] // (1 << 20)))}
        gardener = documents['gardener-worker-kubelet.yaml']['kubernetes']['kubelet']['kubeReserved']
        assert amount('memory', gardener['memory']) == (amount('memory', drop_in['kubeReserved']['memory'])
                                                        + amount('memory', drop_in['systemReserved']['memory']))
