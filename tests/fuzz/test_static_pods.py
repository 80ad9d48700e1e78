"""Static pod manifests (_node/_static_pod_manifest), which any process root trusts could have written and which
the kubelet skips when they are not pods: any text gives a sorted subset of the control-plane components or the
collection's error, within the CPU limit; a Pod built of generated containers gives exactly the components its
containers' commands (else images) name."""

from __future__ import annotations

import json

from hypothesis import example, given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _static_pod_manifest

COMPONENTS = _static_pod_manifest.CONTROL_PLANE_COMPONENTS
PIECES = ['kind: Pod\n', 'kind: PodList\n', 'items:\n', 'spec:\n', '  containers:\n', '  - ', 'command: ', 'image: ',
          '[etcd]', '[kube-apiserver, --v=2]', 'registry.k8s.io/etcd:3.5.15-0', '/usr/local/bin/etcd', '{', '}', '[',
          ']', ',', ':', '"', "'", '&a ', '*a', '!!python/object:os.system', '!!binary', '---\n', '\t', ' ', '\n',
          '\r\n', '\x85', '\u2028', '\x00', '@sha256:', ':5000/', '\\', '#', '{"kind": "Pod"', '"spec": ', 'null',
          '~', '1e999', '0x', '- ', '? ', '|\n', '>\n']
manifest_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=50).map(''.join)


@given(manifest_text)
@example('kind: Pod\nspec:\n  containers:\n  - command: [etcd]\n  - image: registry.k8s.io/kube-apiserver:v1\n')
@example('kind: Pod\nspec: {containers: [{command: [!!python/object/apply:os.system ["true"]]}]}\n')
@example('a: &a [*a]\n')
@cpu_deadline
def test_any_text_gives_known_components_or_the_collections_error(text):
    try:
        found = _static_pod_manifest.control_plane_components(text, '/m/x.yaml')
    except NodeallocError:
        return
    assert found == sorted(set(found)) and set(found) <= set(COMPONENTS)


WORDS = st.one_of(st.sampled_from(list(COMPONENTS) + ['kube-scheduler', 'sh', '', '/']), st.text(max_size=8))
container = st.fixed_dictionaries({'name': st.text(max_size=5)}, optional={
    'command': st.lists(st.one_of(WORDS, st.tuples(st.sampled_from(['/usr/bin/', 'bin/', '']), WORDS).map(''.join)),
                        max_size=3),
    'image': st.tuples(st.sampled_from(['', 'registry.k8s.io/', 'host:5000/a/']), WORDS,
                       st.sampled_from(['', ':v1', '@sha256:' + 'a' * 64])).map(''.join)})


def expected(containers):
    found = set()
    for item in containers:
        if item.get('command'):
            program = item['command'][0].rstrip('/').rsplit('/', 1)[-1]
        elif 'image' in item:
            program = item['image'].split('@')[0].rsplit('/', 1)[-1].split(':')[0]
        else:
            continue
        if program in COMPONENTS:
            found.add(program)
    return sorted(found)


@given(st.lists(container, max_size=4))
@cpu_deadline
def test_a_pod_gives_the_components_its_containers_run(containers):
    text = json.dumps({'apiVersion': 'v1', 'kind': 'Pod', 'spec': {'containers': containers}})
    assert _static_pod_manifest.control_plane_components(text, '/m/x.json') == expected(containers)
