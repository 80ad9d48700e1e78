"""_shown_text: node text as a result shows it (valid UTF-8, each byte that is not UTF-8 ``\\xNN``), and the module
class every module returns through, run as Ansible runs a module (a process fed ANSIBLE_MODULE_ARGS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import example, given, strategies as st

from ansible_collections.nodealloc.kubelet.plugins.module_utils import _shown_text
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs
from ansible_collections.nodealloc.kubelet.tests.unit.utils.collection_paths import COLLECTIONS_PATH


def _node(raw):
    return raw.decode('utf-8', 'surrogateescape')  # as _procfs.decode reads a node's bytes


def _controls(text):
    return sorted(char for char in text if unicodedata.category(char) == 'Cc')


@pytest.mark.parametrize('raw,expected', [
    (b'/\xf8bad', '/\\xf8bad'),  # the cgroup of issue 44, where the facts module's task failed
    (b'rt-\xff\xfe', 'rt-\\xff\\xfe'),  # a process name set through /proc/self/comm (test_untrusted_processes.py)
    (b'--root=/var/lib/\xc3', '--root=/var/lib/\\xc3'),  # a command line cut inside a character
    (b'\xed\xa0\x80', '\\xed\\xa0\\x80'),  # a surrogate's own UTF-8 form: three bytes no strict decoder takes
    (b'line\n\xf8two', 'line\n\\xf8two'),  # a valid line break stays what it was; the escape adds none
])
def test_each_byte_that_is_not_utf8_is_shown_as_its_hex(raw, expected):
    assert _shown_text.shown(_node(raw)) == expected
    assert _procfs.shown(_node(raw)) == expected  # one escaping: the readers' messages show it the same way


@pytest.mark.parametrize('text', ['kubelet.service', '/sys/fs/cgroup/memory/kubepods.slice', 'café', '\u2028',
                                  '\\xf8 written by hand', ''])
def test_valid_text_is_returned_itself(text):
    assert _shown_text.shown(text) is text


def test_a_surrogate_no_bytes_decode_to_is_shown_by_its_code_point():
    # Not from a node (surrogateescape makes only U+DC80..U+DCFF), but still never in a result as it is.
    assert _shown_text.shown('a\ud800b\udfff') == 'a\\ud800b\\udfff'


@given(st.binary(max_size=64))
@example(b'/\xf8bad')
@example(b'\x00\x1b[31m\xff\n')
def test_any_node_bytes_are_shown_as_their_backslashreplace_form(raw):
    text = _node(raw)
    result = _shown_text.shown(text)
    result.encode('utf-8')  # strict: no surrogate left
    assert result == raw.decode('utf-8', 'backslashreplace')
    # The escape adds printable ASCII only: the control characters are the input's own valid ones, no more.
    assert _controls(result) == _controls(text)
    try:
        raw.decode('utf-8')
    except UnicodeDecodeError:
        return
    assert result is text


def test_a_result_is_escaped_through_dicts_lists_and_tuples_keys_too_and_left_as_it_was():
    cgroup = _node(b'/\xf8bad')
    facts = {'memory': {'kube_components': {'cgroups': [{'cgroup': cgroup, 'working_set_bytes': 4096}]}},
             'cpu': {'component_cgroup_ns_by_cgroup': {cgroup: 12}}, 'argv': (cgroup, 1.5, None, True),
             'raw': b'\xff', 'changed': False}
    before = repr(facts)
    shown = _shown_text.shown_result(facts)
    assert shown == {'memory': {'kube_components': {'cgroups': [{'cgroup': '/\\xf8bad', 'working_set_bytes': 4096}]}},
                     'cpu': {'component_cgroup_ns_by_cgroup': {'/\\xf8bad': 12}}, 'argv': ('/\\xf8bad', 1.5, None, True),
                     'raw': '\\xff', 'changed': False}
    assert repr(facts) == before  # the caller's value is not changed


def test_a_valid_result_is_returned_itself_not_copied():
    facts = {'memory': {'cgroups': [{'cgroup': '/system.slice/containerd.service', 'bytes': 1}]}, 'é': ['ü', 2.0]}
    assert _shown_text.shown_result(facts) is facts


MODULE = '''
import sys
from ansible_collections.nodealloc.kubelet.plugins.module_utils._module_glue import NodeallocModule
module = NodeallocModule(argument_spec=dict(how=dict(type='str')))
name = b'/\\xf8bad'.decode('utf-8', 'surrogateescape')
module.warn('ignored a process in %s' % name)
if module.params['how'] == 'fail':
    module.fail_json(msg='cannot read %s' % name, cgroup=name)
module.exit_json(changed=False, cgroups={name: [name]})
'''


def _strings(value):
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [value] if isinstance(value, str) else []


def _run_module(tmp_path, how):
    (tmp_path / 'module.py').write_text(MODULE)
    (tmp_path / 'args.json').write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {'how': how}}))
    completed = subprocess.run([sys.executable, str(tmp_path / 'module.py'), str(tmp_path / 'args.json')],
                               capture_output=True, check=False, timeout=60,
                               env=dict(os.environ, PYTHONPATH=COLLECTIONS_PATH))
    assert b'Traceback' not in completed.stderr, completed.stderr
    # What the controller does with it (MODULE_STRICT_UTF8_RESPONSE): every str must encode as strict UTF-8.
    result = json.loads(completed.stdout.decode('utf-8'))
    json.dumps(result, ensure_ascii=False).encode('utf-8')
    return completed.returncode, result


def test_a_modules_result_and_warnings_are_valid_utf8(tmp_path):
    returncode, result = _run_module(tmp_path, 'exit')
    assert returncode == 0
    assert result['cgroups'] == {'/\\xf8bad': ['/\\xf8bad']}
    # A list of str up to ansible-core 2.18, of WarningSummary documents from 2.19 on: the message is among its strs.
    assert 'ignored a process in /\\xf8bad' in _strings(result['warnings']), result['warnings']


def test_a_modules_failure_message_is_valid_utf8(tmp_path):
    returncode, result = _run_module(tmp_path, 'fail')
    assert returncode == 1 and result['failed'] is True
    assert (result['msg'], result['cgroup']) == ('cannot read /\\xf8bad', '/\\xf8bad')
