"""What a playbook prints for a small fleet (_printed): one screen a node, the verdict first, no arithmetic."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _fleet_report, _printed
from ansible_collections.nodealloc.kubelet.tests.unit.plugins.module_utils._report.test__fleet_report import GI, result

# The module's arithmetic, which belongs in the report's files and not in the job output (issue 46 counted 85 lines
# of it for one node): a kernel watermark, cgroup weights, the rounding step, the prior's name, config quantities
# strung together.
INTERNALS = ('wmark_low', 'w(kubepods)', 'w(system.slice)', 'ceil_MiB', 'cold-start prior', 'MemAvailable',
             'si_mem_available', '/proc/', ' + -/-')
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _one(host, facts):
    return _fleet_report.build_report({host: facts}, now=NOW)


@pytest.mark.parametrize('facts', [
    result(2 * GI, current_memory='1Gi', kubelet_pid=1),      # a change to apply
    result(GI, current_memory='3Gi', kubelet_pid=1),          # nothing to change
    result(GI),                                               # no kubelet on the machine
    {'failed': True, 'msg': 'invalid YAML: while parsing\n  in "<unicode string>", line 3, column 1:\n    ^'},
    {},                                                       # unreachable
])
def test_one_node_fits_a_terminal_screen_in_plain_words_with_its_verdict_first(facts):
    report = _one('node1.example.net', facts)
    printed = _fleet_report.renderings(report)['text_lines']
    whole = _fleet_report.render_text_lines(report)
    assert len(printed) <= 40 and all(len(line) <= _printed.WIDTH for line in printed), printed
    # The verdict leads: its action in words where the report carries verdicts, else the status or the decision.
    node = report['nodes'][0]
    verdict = node.get('verdict') or {}
    # Its own words (the verdict's reason is _verdict's sentence, quoted as it is) name none of the module's internals.
    own = ' '.join(' '.join(line.split()) for line in printed).replace(' '.join(str(verdict.get('reason')).split()), '')
    assert not any(term in own for term in INTERNALS), printed
    first = printed[0]
    assert first.startswith('node1.example.net: ')
    if verdict.get('action'):
        assert _printed.verdict_words(verdict) in first
        if verdict.get('command'):
            # Whole on one line (copied as it is), before the figures.
            at = next(i for i, line in enumerate(printed) if line.strip() in ('Run: ' + verdict['command'], verdict['command']))
            assert 'measured' not in node or at < next(i for i, line in enumerate(printed) if 'Measured' in line)
    elif 'measured' not in node:
        assert 'NOT MEASURED' in first
    # Where the arithmetic is, said last; the file-length text keeps it (the whole text is much longer).
    assert printed[-1] == _printed.FILES
    if 'measured' in node:
        assert any('Measured' in line for line in printed) and any('Recommended' in line for line in printed)
        assert any("vendors' formulas" in line for line in printed)
        assert len(whole) > 2 * len(printed)


def test_a_change_says_what_apply_would_write_field_by_field():
    report = _one('tight', result(2 * GI, current_memory='1Gi', kubelet_pid=1))
    text = ' '.join(line.strip() for line in _printed.lines(report))
    node = report['nodes'][0]
    assert node['config_diff']
    assert 'Apply would write into /var/lib/kubelet/config.yaml:' in text
    assert 'kubeReserved memory 1Gi -> %s' % node['recommended']['kube_reserved']['memory'] in text


def test_hosts_and_reasons_stay_on_their_line_and_cannot_drive_the_terminal():
    report = _one('evil\x1b[31m\nhost', {'failed': True, 'msg': 'boom\x1b]0;title\x07\r\nrest ' + 'x' * 300})
    printed = _printed.lines(report)
    assert all('\x1b' not in line and '\n' not in line and '\r' not in line for line in printed)
    assert all(len(line) <= _printed.WIDTH for line in printed)
    assert '\\x1b' in printed[0]


def test_without_verdicts_a_report_still_leads_with_the_decision():
    # A report from before verdicts (a slice report of an older run on the merge volume).
    report = _one('tight', result(2 * GI, current_memory='1Gi', kubelet_pid=1))
    node = dict(report['nodes'][0])
    node.pop('verdict', None)
    printed = _printed.lines({'nodes': [node]})
    assert printed[0].startswith('tight: INCREASE - memory: reserved now 1.00 GiB')


def test_the_static_cpu_managers_whole_cpus_are_printed_for_the_node():
    facts = result(2 * GI, current_memory='1Gi', kubelet_pid=1)
    facts['current']['system_reserved'] = {'cpu': '700m'}
    facts['basis'] = {'measurement': {'kubelet_config': {'cpuManagerPolicy': 'static', 'systemReserved': {'cpu': '700m'},
                                                         'kubeReserved': {'memory': '1Gi'}}}}
    report = _one('node1.example.net', facts)
    assert report['nodes'][0]['resource_managers'][0].startswith('the static CPU manager: reserve ')
    printed = ' '.join(' '.join(line.split()) for line in _fleet_report.renderings(report)['text_lines'])
    assert 'The static CPU manager: reserve ' in printed and 'whole CPU(s)' in printed
    assert 'strict-cpu-reservation' in printed
