"""Make the staged collection importable as ansible_collections.nodealloc.kubelet; the shared test nodes."""

from __future__ import annotations

import os
import sys

_BUILD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), '.build')
if os.path.isdir(_BUILD) and _BUILD not in sys.path:
    sys.path.insert(0, _BUILD)
# tests/ itself, for the node helpers (ansible-test's pytest does not put it on the path).
_TESTS = os.path.dirname(os.path.abspath(__file__))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from nodes import fleets  # noqa: E402

from helpers import cost_log  # noqa: E402

try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # the controller matrix's environments run a few tests without it
    _hypothesis_settings = None
if _hypothesis_settings is not None:
    # No wall-clock deadline for the property tests in tests/unit: under ansible-test units on two busy CPUs an example
    # of test__quantity that runs in 0.12 ms took 585 ms once and failed the 200 ms default (CI at d2998b1). A time is
    # not what they test; tests/fuzz loads its own profile, with a limit on CPU time (tests/fuzz/cpu_deadline.py).
    _hypothesis_settings.register_profile('nodealloc-units', deadline=None)
    _hypothesis_settings.load_profile('nodealloc-units')

# The shared test nodes, as fixtures every test directory sees (tests/nodes/fleets.py).
fleet, fresh_fleet, rollout_fleet = fleets.fleet, fleets.fresh_fleet, fleets.rollout_fleet
# NODEALLOC_TEST_COST=<file>: each test's wall and CPU seconds (docs/testing.md, "Where the CPU goes").
pytest_runtest_protocol = cost_log.pytest_runtest_protocol
vm_boot, vm_guests, vm_fleet, fresh_vm_fleet = fleets.vm_boot, fleets.vm_guests, fleets.vm_fleet, fleets.fresh_vm_fleet
vm_release_guests = fleets.vm_release_guests


def _fleet_param(item):
    return item.callspec.params.get('rollout_fleet') if getattr(item, 'callspec', None) is not None else None


def pytest_addoption(parser):
    parser.addoption('--nodes-lane', choices=('all', 'vm', 'vm-own', 'vm-session', 'host'), default='all',
                     help='vm: only the tests on QEMU guests (vm-own: those that boot guests of their own, '
                          'vm-session: those on the session\'s guests); host: every other test (hack/run-tests.sh '
                          'runs them side by side: the guests are busy with software emulation while the nspawn '
                          'scenarios mostly wait on their kubelets)')


def _on_guests(item):
    return _fleet_param(item) == 'vm' or 'vm_boot' in getattr(item, 'fixturenames', ()) or (
        os.path.basename(os.path.dirname(str(item.path))) == 'vm')


def _boots_its_own_guests(item):
    return os.path.basename(os.path.dirname(str(item.path))) == 'vm' and 'vm_boot' not in getattr(
        item, 'fixturenames', ())


def pytest_collection_modifyitems(config, items):
    """The rollout scenarios' VM variants last: in one lane, booting guests moves the host's memory before the
    nspawn scenarios that read it have run (their NOISE_TOLERANT thresholds hold it either way)."""
    lane = config.getoption('nodes_lane')
    if lane != 'all':
        keep, drop = [], []
        for item in items:
            if lane == 'host':
                wanted = not _on_guests(item)
            elif lane == 'vm':
                wanted = _on_guests(item)
            else:
                wanted = _on_guests(item) and _boots_its_own_guests(item) == (lane == 'vm-own')
            (keep if wanted else drop).append(item)
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    # On the guests, first the tests that boot guests of their own (oom_outcomes, the Prometheus end to end): while
    # they run, none of the session's guests is up yet, idle but costing CPU; then the tests on the facts guests;
    # then those on the rollout guests (each Debian release, and the rollout scenarios' VM variants last), which boot
    # once the facts guests are off (pytest_runtest_setup). Among those, a module that watches a guest in real time
    # (RUN_FIRST) before the others.
    items.sort(key=lambda item: (_fleet_param(item) == 'vm', _on_rollout_guests(item), not _boots_its_own_guests(item),
                                 not getattr(getattr(item, 'module', None), 'RUN_FIRST', False)))


def _on_rollout_guests(item):
    fixtures = getattr(item, 'fixturenames', ())
    return 'vm_release_guests' in fixtures or 'vm_fleet' in fixtures or fleets.runs_on_rollout_guests(_fleet_param(item))


def pytest_runtest_setup(item):
    """Before the first test on the rollout guests boots them: the facts guests off, once no test left needs them."""
    if _on_rollout_guests(item):
        items = item.session.items
        later = items[items.index(item):] if item in items else items
        if not any('vm_guests' in getattr(later_item, 'fixturenames', ()) for later_item in later):
            fleets.power_off_facts_guests()


def pytest_sessionfinish(session, exitstatus):
    fleets.stop_boot()
