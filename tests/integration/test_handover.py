"""recommend.yml hands the recommendation to kubespray and kubeadm, run through ansible-playbook."""

from __future__ import annotations

import json

import yaml

from test_playbooks import ansible_playbook


def test_recommend_writes_kubespray_host_vars_and_a_kubeadm_patch_in_check_mode(tmp_path):
    handover = tmp_path / 'handover'
    result = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                              '-e', 'reservations_sample_seconds=0.5', '-e', 'nodealloc_handover_dir=%s' % handover,
                              check=True)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    recommended = json.loads((tmp_path / 'reservations.json').read_text())['nodes'][0]['recommended']
    host_vars = yaml.safe_load((handover / 'kubespray/host_vars/localhost.yml').read_text())
    assert host_vars['system_reserved'] is True
    assert host_vars['system_memory_reserved'] == recommended['system_reserved']['memory']
    patch = yaml.safe_load((handover / 'kubeadm-patches/localhost/kubeletconfiguration+strategic.yaml').read_text())
    assert patch['kind'] == 'KubeletConfiguration'
    if recommended['kube_reserved']:
        assert host_vars['kube_reserved'] is True
        assert host_vars['kube_memory_reserved'] == recommended['kube_reserved']['memory']
        assert patch['kubeReserved'] == {k: str(v) for k, v in recommended['kube_reserved'].items()}
    else:
        # No kubelet or runtime process on this machine: kubeReserved is not measured, so neither file sets it
        # (issue 37: never a kubeReserved of 0 from "no process found").
        assert 'kube_reserved' not in host_vars and 'kube_memory_reserved' not in host_vars
        assert 'kubeReserved' not in patch


def test_recommend_without_a_handover_dir_writes_none(tmp_path):
    result = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                              '-e', 'reservations_sample_seconds=0.5', check=True)
    assert result.returncode == 0
    # The report, and the node templates where a node runs a kubelet (docs/templates.md; a machine without one makes
    # none, issue 37); no handover files.
    with open(str(tmp_path / 'reservations.json'), encoding='utf-8') as handle:
        with_kubelet = [node for node in json.load(handle)['nodes'] if node['status'] == 'ok']
    # The report's six files (issue 46: CSV, short summary and the changes, written even without a previous report).
    report = ['reservations%s' % suffix for suffix in ('-changes.md', '-summary.txt', '.csv', '.html', '.json', '.md')]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(report + (['templates'] if with_kubelet else []))
