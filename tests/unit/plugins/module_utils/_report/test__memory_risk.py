"""A node's memory risk: what it reserves against its own history's peak, the policy's headroom and now."""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _memory_risk

MI = 1 << 20
GI = 1 << 30


@pytest.mark.parametrize('reserved, peak, now, headroom, expected', [
    # The node: its own peak (595 MiB) passed what it reserves (512 MiB), inside the 100 MiB eviction margin.
    (512 * MI, 595 * MI, 500 * MI, 512 * MI, 'exceeded'),
    (512 * MI, 400 * MI, 600 * MI, 512 * MI, 'exceeded'),  # now above the reservation, the history below it
    (512 * MI, None, 513 * MI, 512 * MI, 'exceeded'),  # no history: now is the peak
    (1024 * MI, 700 * MI, 500 * MI, 512 * MI, 'thin'),  # 324 MiB over the peak, the policy keeps 512 MiB
    (1024 * MI, 1024 * MI, 500 * MI, 512 * MI, 'thin'),  # at the peak exactly: not yet exceeded
    (1024 * MI, 512 * MI, 500 * MI, 512 * MI, 'ok'),  # exactly the headroom over the peak
    (0, 595 * MI, 500 * MI, 512 * MI, 'not_configured'),  # reserves nothing: its own category, not the worst
    (0, 0, 0, 512 * MI, 'not_configured'),
    (None, 595 * MI, 500 * MI, 512 * MI, 'unknown'),  # kubelet config not found
])
def test_category(reserved, peak, now, headroom, expected):
    risk = _memory_risk.memory_risk(reserved, peak, now, headroom, 8 * GI, 100 * MI)
    assert risk['category'] == expected
    assert risk['reason']


def test_spare_is_a_share_of_the_node_s_memory_so_classes_compare():
    small = _memory_risk.memory_risk(1 * GI, 512 * MI, 0, 256 * MI, 8 * GI, 100 * MI)
    large = _memory_risk.memory_risk(4 * GI, 2 * GI, 0, 1 * GI, 32 * GI, 100 * MI)
    assert small['spare_bytes'] == 512 * MI and large['spare_bytes'] == 2 * GI
    assert small['spare_share'] == large['spare_share'] == 1 / 16.0
    exceeded = _memory_risk.memory_risk(512 * MI, 595 * MI, 0, 512 * MI, 8 * GI, 100 * MI)
    assert exceeded['spare_share'] < 0
    assert _memory_risk.memory_risk(0, 595 * MI, 0, 512 * MI, 8 * GI, 100 * MI)['spare_share'] is None


def test_the_reason_says_whether_the_eviction_margin_was_passed_too():
    inside = _memory_risk.memory_risk(512 * MI, 595 * MI, 0, 512 * MI, 8 * GI, 100 * MI)
    beyond = _memory_risk.memory_risk(512 * MI, 700 * MI, 0, 512 * MI, 8 * GI, 100 * MI)
    assert 'inside the 100 MiB eviction threshold' in inside['reason']
    assert 'a global OOM was possible' in beyond['reason']


def test_order_puts_exceeded_first_and_not_configured_after_thin():
    ranked = sorted(['ok', 'not_configured', 'thin', 'exceeded', 'no_kubelet', 'unknown'], key=_memory_risk.rank)
    assert ranked[:3] == ['exceeded', 'thin', 'not_configured'] and ranked[-1] == 'no_kubelet'
