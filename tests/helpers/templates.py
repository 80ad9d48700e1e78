"""Check node templates (plugins/module_utils/_report/_node_templates.py) against each project's published schema.

The schemas are test data under tests/unit/fixtures/template_schemas/, each citing the repository, path and
commit it was read from; jsonschema does the validating.
"""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
import yaml

try:
    import tomllib
except ImportError:  # Python < 3.11: no TOML reader to read Bottlerocket's template back with
    tomllib = None

SCHEMAS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'unit', 'fixtures', 'template_schemas')
SCHEMA_OF = {
    'karpenter-ec2nodeclass-patch.yaml': 'karpenter_ec2nodeclass_kubelet.json',
    'capi-kubeadmconfigtemplate-patch.yaml': 'capi_kubeadmconfigtemplate.json',
    'eks-nodeadm-nodeconfig.yaml': 'eks_nodeadm_nodeconfig.json',
    'gardener-worker-kubelet.yaml': 'gardener_worker_kubelet.json',
    '50-nodealloc.conf': 'kubelet_configuration_drop_in.json',
    'bottlerocket-settings.toml': 'bottlerocket_settings.json',
    'talos-machineconfig-patch.yaml': 'talos_machineconfig_patch.json',
    'openshift-kubeletconfig.yaml': 'openshift_kubeletconfig.json',
    'aks-agentpool-kubeletconfig.yaml': 'aks_agentpool_kubeletconfig.json',
}
# Bottlerocket's user data is TOML: read back with Python's own TOML reader (3.11+), as strict as the format.
TOML_FILES = frozenset(('bottlerocket-settings.toml',))


def schema(name):
    with open(os.path.join(SCHEMAS, name), encoding='utf-8') as handle:
        return json.load(handle)


def parse(file_name, text):
    """A rendered template as its tool reads it: TOML for Bottlerocket, YAML for the others."""
    if file_name in TOML_FILES:
        if tomllib is None:
            pytest.skip('reading TOML back needs Python 3.11 (tomllib)')
        return tomllib.loads(text)
    return yaml.safe_load(text)


def validate(file_name, text):
    """Parse a template (``parse``) and validate it against its project's schema; returns the document."""
    document = parse(file_name, text)
    jsonschema.validate(document, schema(SCHEMA_OF[file_name]))
    if file_name == 'capi-kubeadmconfigtemplate-patch.yaml':
        # The file kubeadm reads as its kubeletconfiguration patch: a KubeletConfiguration itself.
        for item in document['spec']['template']['spec']['files']:
            jsonschema.validate(json.loads(item['content']), schema(SCHEMA_OF['50-nodealloc.conf']))
    return document


def schema_fails(file_name, document):
    """The first error ``file_name``'s schema finds in ``document``, or None."""
    return jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema(SCHEMA_OF[file_name]))(schema(SCHEMA_OF[file_name])).iter_errors(document))
