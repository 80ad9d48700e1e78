"""The config writer meets the controller's own types: what a filter plugin is handed (ansible-core 2.16-2.18
failed here with RepresenterError). Controller-side tests: ansible-test runs tests/unit/plugins/module_utils with only
ansible.module_utils importable, so these live with the filters, which run where these types exist."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _config_edit as edit
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report
from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._kubelet.test__config_edit import KUBEADM_YAML


def _as_the_controller_passes_it(text, wrapped=True):
    """``text`` loaded as ansible-core loads variables, and by default wrapped as templating hands them to a filter.

    The running ansible-core's own types at every depth, whatever version it is: AnsibleMapping/AnsibleUnicode
    (loaded) and AnsibleUnsafeText (wrapped) before 2.19, tagged dict/str/int/float/list from 2.19 on (each matrix
    lane runs this). Wrapping turns mappings into plain dicts; loaded alone, they are the controller's own.
    """
    from ansible.parsing.yaml.loader import AnsibleLoader
    from ansible.utils.unsafe_proxy import wrap_var

    loaded = AnsibleLoader(text).get_single_data()
    return wrap_var(loaded) if wrapped else loaded


CONTROLLER_TEXT = ('kubeReserved:\n  cpu: 100m\n  memory: 1Gi\nsystemReserved:\n  memory: 512Mi\n'
                   'evictionHard:\n  memory.available: 100Mi\nmaxPods: 110\ncpuCFSQuotaPeriod: 0.1\n'
                   'clusterDNS:\n- 10.96.0.10\nserializeImagePulls: false\n')


@pytest.mark.parametrize('wrapped', [False, True], ids=['loaded', 'wrapped'])
def test_ansible_string_types_dump_as_plain_yaml_at_every_depth(wrapped):
    controller = _as_the_controller_passes_it(CONTROLLER_TEXT, wrapped)
    plain = yaml.safe_load(CONTROLLER_TEXT)
    # The test means something only while the controller's types are not the plain ones.
    assert type(next(iter(controller))) is not str  # pylint: disable=unidiomatic-typecheck
    assert wrapped or type(controller['kubeReserved']) is not dict  # pylint: disable=unidiomatic-typecheck
    assert edit.render_document(controller, 'yaml') == edit.render_document(plain, 'yaml')
    assert edit.render_yaml(KUBEADM_YAML, controller, ['kubeReserved', 'maxPods']) == edit.render_yaml(
        KUBEADM_YAML, plain, ['kubeReserved', 'maxPods'])


def test_report_diff_takes_the_controllers_types():
    # The path of the ansible-core 2.16/2.18 failure: the report filter's config_diff renders what it was given.
    current = 'kube_reserved:\n  cpu: 100m\n  memory: 1Gi\nsystem_reserved:\n  memory: 512Mi\n'
    recommended = 'kube_reserved:\n  cpu: 200m\n  memory: 2Gi\nsystem_reserved:\n  memory: 512Mi\n'
    diff = _fleet_report.config_diff(_as_the_controller_passes_it(current), _as_the_controller_passes_it(recommended))
    assert diff == _fleet_report.config_diff(yaml.safe_load(current), yaml.safe_load(recommended))
    assert '+  memory: 2Gi' in diff and '-  memory: 1Gi' in diff
