"""The sampler's units rendered from hostile settings: refused (NodeallocError), or units systemd reads as meant.

Every rendering that is accepted keeps the defaults' directives, one per line, printable ASCII; a sample of them is
checked by ``systemd-analyze verify`` (one call for all, it costs a second) and still scores at most 1.0 in
``systemd-analyze security --offline=true``.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._sampler import _systemd_units
from ansible_collections.nodealloc.kubelet.tests.fuzz.strategies import hostile_text
from ansible_collections.nodealloc.kubelet.tests.unit.utils import sampler_unit

SYSTEMD_ANALYZE = shutil.which('systemd-analyze')
SETTINGS, SAMPLER_DIR = sampler_unit.settings()
# Unit-file values near the forms each rule takes, and hostile ones.
NEAR = {
    'interval': ['1min', '2h 30min', '90', '1 1min', '\n1min', '1min\x0b', '1min ', '1.5h', '0', '1' * 30 + 'min'],
    'cpu_quota': ['20%', '150%', '0.5%', '\uff12\uff10%', '20%\n', '1' * 30 + '%'],
    'memory_max': ['64M', '1G', '5%', 'infinity', '\u0666\u0664M', '0', '64M\n', '9' * 30 + 'E'],
    'nice': ['15', '-20', '19', '\uff11\uff15', ' 5', '5\n'],
    'history_path': ['/var/lib/nodealloc/history.jsonl', '/history.jsonl', '/a/b', '/a/../b/c', '/a//b/./c'],
    'state_path': ['/var/lib/nodealloc/state.json', '/s', '/x y/z'],
    'textfile_path': ['', '/run/prom/x.prom', '/x.prom'],
}
values = st.one_of(hostile_text, st.text(alphabet=st.characters(max_codepoint=0x7f), max_size=12))
# One setting changed at a time (each near value is tried), or several at once.
settings_strategy = st.one_of(
    st.sampled_from([{name: value} for name, near in NEAR.items() for value in near]),
    st.fixed_dictionaries({}, optional={name: st.one_of(st.sampled_from(near), values) for name, near in NEAR.items()}))
ACCEPTED = []


def directives(text):
    return [line.split('=', 1)[0] for line in text.splitlines() if line and not line.startswith(('#', '['))]


DEFAULT_DIRECTIVES = (directives(_systemd_units.service(SETTINGS, SAMPLER_DIR)),
                      directives(_systemd_units.timer(SETTINGS)))


@settings(max_examples=max(20, settings.default.max_examples))
@given(settings_strategy, st.one_of(st.sampled_from(['/usr/local/lib/nodealloc', '/', '/opt']), values))
@cpu_deadline
def test_unit_renderer(changes, sampler_dir):
    chosen = dict(SETTINGS, **changes)
    try:
        files = _systemd_units.files(chosen, sampler_dir, '/etc/systemd/system')
    except NodeallocError:
        return
    service = files['/etc/systemd/system/' + _systemd_units.SERVICE_NAME][0]
    timer = files['/etc/systemd/system/' + _systemd_units.TIMER_NAME][0]
    assert (directives(service), directives(timer)) == DEFAULT_DIRECTIVES
    for text in (service, timer):
        assert all(32 <= ord(c) < 127 or c == '\n' for c in text), text
    assert not [line for line in service.splitlines() if re.match(r'ReadWritePaths=.*-/( |$)', line)]
    if len(ACCEPTED) < 25 and changes:
        ACCEPTED.append((service, timer))


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason='systemd-analyze is not installed (the systemd package)')
def test_accepted_units_verify_and_stay_sandboxed(tmp_path):
    """After test_unit_renderer (same module, in order): every accepted rendering it kept, in one verify call."""
    if not ACCEPTED:
        pytest.skip('test_unit_renderer kept no accepted rendering (run with it)')
    paths = []
    for index, (service, timer) in enumerate(ACCEPTED):
        name = 'nodealloc-fuzz%d' % index
        (tmp_path / (name + '.service')).write_text(service)
        (tmp_path / (name + '.timer')).write_text(timer)
        paths += [str(tmp_path / (name + '.service')), str(tmp_path / (name + '.timer'))]
    verified = subprocess.run([SYSTEMD_ANALYZE, 'verify'] + paths, capture_output=True, text=True, check=False,
                              timeout=60)
    # verify also complains that the ExecStart= script is not installed here: nothing else may be said.
    said = [line for line in (verified.stdout + verified.stderr).splitlines()
            if line and 'nodealloc-sampler.py' not in line and 'is not executable' not in line]
    assert said == [], '\n'.join(said)
    scored = subprocess.run([SYSTEMD_ANALYZE, 'security', '--offline=true', '--no-pager'] + paths[::2][:5],
                            capture_output=True, text=True, check=False, timeout=60)
    exposures = [float(x) for x in re.findall(r'Overall exposure level for \S+: ([0-9.]+)', scored.stdout)]
    assert exposures and max(exposures) <= 1.0, scored.stdout[-2000:]
