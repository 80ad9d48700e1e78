"""Prometheus textfile output checked by promtool; the execution environment's build context."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
MODULE = 'ansible_collections.nodealloc.kubelet.plugins.modules.node_reservation_facts'


def test_textfile_metrics_pass_promtool(tmp_path):
    if not shutil.which('promtool'):
        pytest.skip("promtool is in Debian's prometheus package (make test installs it)")
    textfile = tmp_path / 'nodealloc.prom'
    args = tmp_path / 'args.json'
    args.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {'sample_seconds': 0.2, 'history': False,
                                                        'textfile_path': str(textfile)}}))
    result = json.loads(subprocess.run([sys.executable, '-m', MODULE, str(args)], capture_output=True, text=True,
                                       check=True).stdout)
    assert result['changed'] is True  # it wrote the metrics file
    text = textfile.read_text()
    check = subprocess.run(['promtool', 'check', 'metrics'], input=text, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'nodealloc_memory_non_pod_bytes %d' % result['memory']['non_pod_bytes'] in text
    assert '# TYPE nodealloc_reserved_memory_bytes gauge' in text


def test_check_mode_writes_no_textfile(tmp_path):
    textfile = tmp_path / 'nodealloc.prom'
    args = tmp_path / 'args.json'
    args.write_text(json.dumps({'ANSIBLE_MODULE_ARGS': {'sample_seconds': 0, 'history': False,
                                                        'textfile_path': str(textfile),
                                                        '_ansible_check_mode': True}}))
    subprocess.run([sys.executable, '-m', MODULE, str(args)], capture_output=True, text=True, check=True)
    assert not textfile.exists()


def test_ansible_builder_creates_a_context_that_installs_the_collection(tmp_path):
    build = tmp_path / 'build'
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--output-path', str(build), ROOT],
                   check=True, capture_output=True)
    # The EE definition names ../build/ beside meta/: copy the collection's meta/ next to that build dir.
    shutil.copytree(os.path.join(ROOT, 'meta'), tmp_path / 'meta')
    context = tmp_path / 'context'
    subprocess.run([os.path.join(BIN, 'ansible-builder'), 'create', '-f', 'execution-environment.yml',
                    '--context', str(context)], cwd=tmp_path / 'meta', check=True, capture_output=True)
    assert (context / 'Dockerfile').is_file()
    built = context / '_build'
    # What the Dockerfile runs in its galaxy stage, run here against the same files.
    installed = tmp_path / 'installed'
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '-r', 'requirements.yml',
                    '-p', str(installed), '--force'], cwd=built, check=True, capture_output=True)
    assert (installed / 'ansible_collections' / 'nodealloc' / 'kubelet' / 'plugins' / 'modules'
            / 'node_reservation_facts.py').is_file()
    bindep = subprocess.run([os.path.join(BIN, 'bindep'), '-f', str(built / 'bindep.txt'), '-l', 'newline'],
                            capture_output=True, text=True, check=False)
    assert bindep.returncode in (0, 1) and 'openssh' in bindep.stdout  # 1: listed packages are missing here
