"""Check node templates (plugins/module_utils/_report/_node_templates.py) against each project's published schema.

The schemas are test data under tests/unit/fixtures/template_schemas/, each citing the repository, path and
commit it was read from; jsonschema does the validating.
"""

from __future__ import annotations

import json
import os

import jsonschema
import yaml

SCHEMAS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'unit', 'fixtures', 'template_schemas')
SCHEMA_OF = {
    'karpenter-ec2nodeclass-patch.yaml': 'karpenter_ec2nodeclass_kubelet.json',
    'capi-kubeadmconfigtemplate-patch.yaml': 'capi_kubeadmconfigtemplate.json',
    'eks-nodeadm-nodeconfig.yaml': 'eks_nodeadm_nodeconfig.json',
    'gardener-worker-kubelet.yaml': 'gardener_worker_kubelet.json',
    '50-nodealloc.conf': 'kubelet_configuration_drop_in.json',
}


def schema(name):
    with open(os.path.join(SCHEMAS, name), encoding='utf-8') as handle:
        return json.load(handle)


def validate(file_name, text):
    """Parse a template as YAML and validate it against its project's schema; returns the document."""
    document = yaml.safe_load(text)
    jsonschema.validate(document, schema(SCHEMA_OF[file_name]))
    if file_name == 'capi-kubeadmconfigtemplate-patch.yaml':
        # The file kubeadm reads as its kubeletconfiguration patch: a KubeletConfiguration itself.
        for item in document['spec']['template']['spec']['files']:
            jsonschema.validate(json.loads(item['content']), schema(SCHEMA_OF['50-nodealloc.conf']))
    return document
