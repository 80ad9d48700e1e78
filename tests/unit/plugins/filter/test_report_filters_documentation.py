# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report filters document the options the playbooks pass them.

Beside the filters, not the module_utils tests: ``ansible-test units`` gives tests under
tests/unit/plugins/module_utils only ``ansible.module_utils``, and the filters import ``ansible.errors``.
"""

from __future__ import annotations

import importlib

import pytest
import yaml


@pytest.mark.parametrize('name', ['reservation_report', 'reservation_report_merge'])
def test_the_filters_document_the_previous_report_and_report_path(name):
    # ansible-doc reads DOCUMENTATION as YAML: a filter whose documentation does not parse has none.
    module = importlib.import_module('ansible_collections.nodealloc.kubelet.plugins.filter.%s' % name)
    options = yaml.safe_load(module.DOCUMENTATION)['options']
    assert options['previous_report']['type'] == 'path' and options['report_path']['type'] == 'str'
    assert 'csv' in yaml.safe_load(module.RETURN)['_value']['description']
