"""benchmarks/oom_outcomes.py at a small size: two small guests, ``none`` and ``measured``, a short warm-up.

Run, not timed (docs/benchmarks.md has the full table), in every ``make test``: about 330 s (two guests in parallel,
the ``measured`` one's warm-up the longer), in the VM guests' pytest that runs beside the
nspawn tests (hack/run-tests.sh). The benchmark boots its own guests (it does
not use the session's ``vm_guests``) and runs in this process, not as a subprocess, so that
vmnodes' stale-guest cleanup knows the session's guests as live and leaves them alone. What it checks is what the guest's kernel showed
and does not depend on how fast the machine is: with nothing reserved, kubepods' limit is the whole
memory, so pods that together allocate more than the node has end in a global OOM whatever the
timing; with the collection's recommendation the kubepods cgroup fills first, so its own OOM kills
pods and nothing outside it dies. The kernel named is the guest's (``uname -r`` over SSH), which
boots the host's Debian kernel.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os

import pytest

from nodes import vmnodes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Big enough for the guest's own system, the node life's growth and a pod beside the reservation.
GUEST_MIB = 1280
# The JSON shape, per policy.
SHAPE = {'global_oom_kills': int, 'non_pod_killed': int, 'kubelet_survived': bool, 'allocatable_bytes': int,
         'cgroup_oom_kills': int}


@pytest.fixture(scope='module')
def outcomes(tmp_path_factory):
    reason = vmnodes.missing()
    if reason:
        pytest.skip(reason)
    state_dir = str(tmp_path_factory.mktemp('oom-outcomes'))
    spec = importlib.util.spec_from_file_location('oom_outcomes', os.path.join(ROOT, 'benchmarks', 'oom_outcomes.py'))
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        status = benchmark.main(['--json', '--policies', 'none,measured', '--guest-mib', str(GUEST_MIB),
                                 '--reaction-seconds', '10', '--parallel', '2', '--state-dir', state_dir])
    assert status == 0, 'oom_outcomes failed: %s' % output.getvalue()
    return json.loads(output.getvalue().splitlines()[-1])


def test_json_shape(outcomes):
    assert set(outcomes) == {'kernel', 'policies'}
    assert outcomes['kernel'] == vmnodes.kernel_version()
    assert list(outcomes['policies']) == ['none', 'measured']
    for name, row in outcomes['policies'].items():
        assert set(row) == set(SHAPE), name
        for key, kind in SHAPE.items():
            # bool is an int to isinstance: an int field must not hold one.
            assert isinstance(row[key], kind) and (kind is bool or not isinstance(row[key], bool)), (name, key, row[key])


def test_nothing_reserved_ends_in_a_global_oom(outcomes):
    row = outcomes['policies']['none']
    assert row['global_oom_kills'] >= 1, row
    # The kubelet's -999 (pkg/kubelet/qos/policy.go) keeps it out of the kernel's choice.
    assert row['kubelet_survived'], row


def test_measured_reservation_keeps_the_oom_inside_kubepods(outcomes):
    row = outcomes['policies']['measured']
    assert row['global_oom_kills'] == 0, row
    assert row['non_pod_killed'] == 0, row
    assert row['kubelet_survived'], row
    # The pods still overfilled their share: the kubepods cgroup's own OOM is what stopped them.
    assert row['cgroup_oom_kills'] >= 1, row
    assert row['allocatable_bytes'] < outcomes['policies']['none']['allocatable_bytes']
