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
    assert host_vars['kube_reserved'] is True and host_vars['system_reserved'] is True
    assert host_vars['kube_memory_reserved'] == recommended['kube_reserved']['memory']
    assert host_vars['system_memory_reserved'] == recommended['system_reserved']['memory']
    patch = yaml.safe_load((handover / 'kubeadm-patches/localhost/kubeletconfiguration+strategic.yaml').read_text())
    assert patch['kind'] == 'KubeletConfiguration'
    assert patch['kubeReserved'] == {k: str(v) for k, v in recommended['kube_reserved'].items()}


def test_recommend_without_a_handover_dir_writes_none(tmp_path):
    result = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                              '-e', 'reservations_sample_seconds=0.5', check=True)
    assert result.returncode == 0
    # The report and the node templates (docs/templates.md); no handover files.
    assert sorted(p.name for p in tmp_path.iterdir()) == ['reservations.html', 'reservations.json', 'reservations.md',
                                                          'templates']
