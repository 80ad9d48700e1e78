"""The node templates with hostile text in every name that reaches them (issue 44): the host name, the inventory's
class, the class a node's label gave it in Prometheus (its facts' class_template), the class history's reason and
label, and an eviction signal a node's facts name.

Each rendered file is parsed back (yaml.safe_load, Bottlerocket's TOML with tomllib, and the Cluster API patch's JSON
content with json.loads): its key paths must be the ones the same fleet with plain names gets, and its header must
stay comment lines: as many as the plain fleet's, plus the one saying why a class name was not used.
"""

from __future__ import annotations

import json
import tomllib

import yaml
from hypothesis import given, settings, strategies

from ansible_collections.nodealloc.kubelet.plugins.module_utils._policy import _model_template
from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _image_templates, _node_templates
from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import within_deadline
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import hostile_text

GIB = 1 << 30
# libyaml's parser where PyYAML has it (the pure-Python one took most of the run); a whole fleet rendered and ten
# files parsed per example: fewer examples than the parsers get, as the report renderers (test_reports.py).
LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
# The OpenShift KubeletConfig selects its pool by a label named after the class: the one key a class name is part of.
POOL_LABEL = _image_templates.OPENSHIFT_POOL_LABEL
TEMPLATE_EXAMPLES = settings(max_examples=max(10, settings.default.max_examples // 4))


def fleet(host, inventory_class, label_class, reason, label):
    """Two measured nodes of 16 GiB: ``host`` (the inventory's class ``inventory_class``) and one whose class came
    from Prometheus (``label_class``, with the class history's ``label`` and ``reason``)."""
    def facts(template=None):
        return {'recommendation': {'kube_reserved': {'cpu': '80m', 'memory': '900Mi'},
                                   'system_reserved': {'cpu': '100m', 'memory': '1Gi'}},
                'class_record': {'node_class': [16, 4]}, 'memory': {'mem_total_bytes': 16 * GIB},
                'current': {'eviction_hard': {'memory.available': '100Mi', 'nodefs.available': '10%'}},
                'class_template': template}
    template = {'class': label_class, 'label': label, 'used': False, 'reason': reason, 'problems': []}
    return {host: {'facts': facts(), 'node_class': inventory_class},
            'labelled': {'facts': facts(template), 'node_class': None}}


def keys(value):
    """Every key path of a parsed document, the JSON of a string that holds one parsed too."""
    if isinstance(value, dict):
        return {(POOL_LABEL + '<class>' if str(key).startswith(POOL_LABEL) else str(key),) + rest
                for key, item in value.items() for rest in keys(item) | {()}}
    if isinstance(value, list):
        return {('[]',) + rest for item in value for rest in keys(item) | {()}}
    if isinstance(value, str) and value.startswith('{'):
        return {('<json>',) + rest for rest in keys(json.loads(value))}
    return set()


def parsed(path, content):
    """A rendered file as its tool reads it: Bottlerocket's TOML with Python's TOML reader, the others as YAML."""
    if path.split('/', 1)[1] in _image_templates.TOML_FILES:
        return tomllib.loads(content)
    return yaml.load(content, Loader=LOADER)


def by_file(rendered):
    """{file name: [(key paths, header lines, other lines)]} over the classes (in the order rendered)."""
    out = {}
    for item in rendered:
        lines = item['content'].splitlines()
        header = [line for line in lines if line.startswith('#')]
        assert lines[:len(header)] == header, item['content']  # the header first, whole
        out.setdefault(item['path'].split('/', 1)[1], []).append(
            (keys(parsed(item['path'], item['content'])), len(header), len(lines) - len(header)))
    return out


PLAIN = by_file(_node_templates.render(fleet('plain-host', 'plain-class', 'plain-label', None, 'label_pool')))
PLAIN_REASON = by_file(_node_templates.render(fleet('plain-host', 'plain-class', 'plain-label', 'no series',
                                                    'label_pool')))


@TEMPLATE_EXAMPLES
@given(hostile_text, hostile_text, hostile_text, hostile_text, hostile_text)
def test_no_name_adds_a_key_or_leaves_the_header(host, inventory_class, label_class, reason, label):
    hosts = fleet(host or 'h', inventory_class or 'c', label_class or 'l', reason or None, label)
    rendered = within_deadline(_node_templates.render, hosts)
    plain = PLAIN_REASON if reason else PLAIN
    files = by_file(rendered)
    assert sorted(files) == sorted(plain)
    plain_keys = {frozenset(entry[0]) for entries in plain.values() for entry in entries}
    for file_name, entries in files.items():
        expected = plain[file_name][0]
        for paths, header_lines, body_lines in entries:
            # metadata.name is the class's object name: the same key, whatever the class is called.
            assert frozenset(paths) in plain_keys and paths == expected[0], (file_name, paths ^ expected[0])
            assert body_lines == expected[2]
            # One class or two (both names refused: one size class), and at most one line each saying why.
            assert expected[1] - 1 <= header_lines <= expected[1] + 2, (file_name, header_lines, expected[1])
    for item in rendered:
        assert item['path'].count('/') == 1 and item['path'].split('/')[0] not in ('', '.', '..')


PLAIN_TOP = {item['path']: set(parsed(item['path'], item['content']))
             for item in _node_templates.render(fleet('h', 'c', 'l', None, 'label_pool'))}


@TEMPLATE_EXAMPLES
@given(hostile_text)
def test_no_signal_a_node_names_leaves_the_header_or_adds_a_top_level_key(signal):
    hosts = fleet('h', 'c', 'l', None, 'label_pool')
    hosts['h']['facts']['current']['eviction_hard'][signal or 's'] = '5%'
    for item in within_deadline(_node_templates.render, hosts):
        assert set(parsed(item['path'], item['content'])) == PLAIN_TOP[item['path']]


@TEMPLATE_EXAMPLES
@given(hostile_text)
def test_no_threshold_a_node_gives_adds_a_key_or_stops_the_render(value):
    # A node's config value goes into every file (Bottlerocket's TOML only where it is a threshold Bottlerocket takes):
    # whatever it holds, each file still parses to the plain fleet's top-level keys.
    hosts = fleet('h', 'c', 'l', None, 'label_pool')
    hosts['h']['facts']['current']['eviction_hard']['nodefs.available'] = value
    for item in within_deadline(_node_templates.render, hosts):
        assert set(parsed(item['path'], item['content'])) == PLAIN_TOP[item['path']]


def _max_pods_written(item):
    """The maxPods a rendered file sets, wherever its tool reads it, or None."""
    document = parsed(item['path'], item['content'])
    found = []

    def walk(value):
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ('maxPods', 'max-pods'):
                    found.append(inner)
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)
        elif isinstance(value, str) and value.startswith('{'):
            walk(json.loads(value))
    walk(document)
    return found


@TEMPLATE_EXAMPLES
@given(strategies.one_of(strategies.integers(), hostile_text, strategies.floats(allow_nan=True), strategies.booleans(),
                         strategies.none(), strategies.lists(strategies.integers(), max_size=3)),
       strategies.one_of(strategies.sampled_from(['kubelet', 'option', 'default']), hostile_text, strategies.none()))
def test_a_max_pods_a_node_gives_is_written_only_as_a_pod_count_both_nodes_share(count, source):
    # Issue 45: a node's class_record is its word. Its maxPods reaches a template only as a whole number from 1 to
    # _model_template.MAX_TEMPLATE_PODS, given (its kubelet's or the option's, not the assumed default), that the
    # other node of its class gives too; anything else writes none.
    hosts = fleet('h', 'c', 'l', None, 'label_pool')
    hosts['labelled']['node_class'] = 'c'
    for host in hosts:
        hosts[host]['facts']['class_record'] = dict(hosts[host]['facts']['class_record'], max_pods=count,
                                                    max_pods_source=source)
    valid = (isinstance(count, int) and not isinstance(count, bool) and 0 < count <= _model_template.MAX_TEMPLATE_PODS
             and source in ('kubelet', 'option'))
    for item in within_deadline(_node_templates.render, hosts):
        written = _max_pods_written(item)
        if valid and not item['path'].endswith(_image_templates.AKS):
            # A whole number as its parser reads it back (YAML and TOML integers, never a boolean or a string).
            assert written and all(value == count and isinstance(value, int) and not isinstance(value, bool)
                                   for value in written), item['content']
        else:
            assert not written, item['content']
