"""The sampler the role installs, run as its systemd service runs it: one reading into the history."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLER = os.path.join(ROOT, 'roles', 'reservations', 'files', 'nodealloc-sampler.py')


def test_each_run_appends_one_sample(tmp_path):
    # Installed layout: the script beside ansible_collections/nodealloc/kubelet/plugins/module_utils.
    install = tmp_path / 'lib'
    utils = install / 'ansible_collections' / 'nodealloc' / 'kubelet' / 'plugins'
    utils.mkdir(parents=True)
    os.symlink(os.path.join(ROOT, 'plugins', 'module_utils'), utils / 'module_utils')
    script = install / 'nodealloc-sampler.py'
    script.write_text(open(SAMPLER).read())
    history = tmp_path / 'history.jsonl'
    for _run in range(3):
        subprocess.run([sys.executable, str(script), '--history', str(history), '--state', str(tmp_path / 'state.json'),
                        '--textfile', str(tmp_path / 'nodealloc.prom'), '--sample-seconds', '0.2'],
                       check=True, capture_output=True, env={'PATH': os.environ['PATH']})
    lines = [json.loads(line) for line in history.read_text().splitlines()]
    assert len(lines) == 3
    assert all(line['source'] == 'sampler' and line['non_pod_bytes'] > 0 for line in lines)
    assert lines[0]['t'] < lines[1]['t'] < lines[2]['t']
    assert 'nodealloc_history_samples 3\n' in (tmp_path / 'nodealloc.prom').read_text()
