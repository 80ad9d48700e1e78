"""A default check-mode run of recommend.yml says nothing it need not (issue 46 item 3): no warning for an option
nobody set or about a kubelet that is not there, changed=0, and one screen of plain words for the one node."""

from __future__ import annotations

import json
import re

from test_playbooks import ansible_playbook

# A terminal screen: 40 lines of 80 columns.
SCREEN_LINES, SCREEN_COLUMNS = 40, 80


def _printed(stdout):
    """The lines ansible.builtin.debug printed under "Print the report", as the terminal shows them."""
    task = stdout.split('TASK [Print the report]', 1)[1].split('\n', 1)[1]
    return task.split('\n\n', 1)[0].splitlines()


def test_a_default_check_run_is_quiet_and_its_output_fits_a_screen(tmp_path):
    run = ansible_playbook('playbooks/recommend.yml', '-e', 'nodealloc_report_dir=%s' % tmp_path,
                           '-e', 'reservations_sample_seconds=0.2', check=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    output = run.stdout + run.stderr
    node = json.loads((tmp_path / 'reservations.json').read_text())['nodes'][0]
    # reservations_jump_headroom_factor is deprecated and unset by default: no deprecation warning for it.
    assert '[DEPRECATION WARNING]' not in output, output[-3000:]
    if node['status'] == 'no_kubelet':
        # No kubelet here (the test machines): no warning about one (failCgroupV1, cgroup v1's end of life), nor any.
        assert '[WARNING]' not in output, output[-3000:]
    # The report files are the run's output on the controller, not a change: check mode changes nothing.
    assert re.search(r'localhost +: ok=\d+ +changed=0 +unreachable=0 +failed=0 ', run.stdout), run.stdout[-2000:]
    printed = _printed(run.stdout)
    print('\n'.join(printed))
    assert printed[0].startswith('ok: [localhost]') and printed[1].strip() == 'msg:'
    assert len(printed) <= SCREEN_LINES and max(len(line) for line in printed) <= SCREEN_COLUMNS, printed
    # The verdict first, then the figures; no arithmetic of the module's.
    assert printed[2].startswith("    - 'localhost: "), printed[2]
    text = '\n'.join(printed)
    for internal in ('wmark_low', 'w(kubepods)', 'ceil_MiB', 'explanation:', 'MemAvailable'):
        assert internal not in text, internal
    assert 'Measured' in text and 'Recommended' in text and 'report files' in text
