"""Prometheus textfile output checked by promtool; the execution environment's build context."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from packaging.specifiers import SpecifierSet

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
    assert '# TYPE nodealloc_kubelet_reserved_memory_bytes gauge' in text


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
    # ansible-builder names the file for the container runtime it finds (Containerfile for podman).
    containerfile = next(context / name for name in ('Containerfile', 'Dockerfile') if (context / name).is_file())
    arguments = dict(re.findall(r'^ARG (\w+)="([^"]*)"$', containerfile.read_text(), re.M))
    # The interpreter every stage runs (pip, ansible-galaxy, ansible-playbook) must be one ansible-core accepts:
    # its Requires-Python, read from the ansible-core the EE installs, against the version in the interpreter path.
    core_version = re.fullmatch(r'ansible-core==(\S+)', arguments['ANSIBLE_INSTALL_REFS'].split()[0]).group(1)
    assert core_version == importlib.metadata.version('ansible-core')  # the same ansible-core the tests run
    requires_python = SpecifierSet(importlib.metadata.metadata('ansible-core')['Requires-Python'])
    interpreter_version = re.fullmatch(r'/usr/bin/python(3\.\d+)', arguments['PYCMD']).group(1)
    assert interpreter_version in requires_python, (arguments['PYCMD'], str(requires_python))
    assert arguments['PYPKG'] == 'python' + interpreter_version  # installed by the package manager, not assumed
    assert arguments['PKGMGR'] == '/usr/bin/dnf' and arguments['EE_BASE_IMAGE'].startswith('quay.io/centos/centos:stream9')
    built = context / '_build'
    assert 'kubernetes' in (built / 'requirements.txt').read_text()  # k8s_info's client library
    # What the Containerfile runs in its galaxy stage, run here against the same files.
    installed = tmp_path / 'installed'
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '-r', 'requirements.yml',
                    '-p', str(installed), '--force'], cwd=built, check=True, capture_output=True)
    collection = installed / 'ansible_collections' / 'nodealloc' / 'kubelet'
    assert (collection / 'plugins' / 'modules' / 'node_reservation_facts.py').is_file()
    manifest = json.loads((collection / 'MANIFEST.json').read_text())
    assert 'kubernetes.core' in manifest['collection_info']['dependencies']
    assert manifest['collection_info']['license'] == ['GPL-3.0-or-later'] and (collection / 'LICENSE').is_file()
    bindep = subprocess.run([os.path.join(BIN, 'bindep'), '-f', str(built / 'bindep.txt'), '-l', 'newline'],
                            capture_output=True, text=True, check=False)
    assert bindep.returncode in (0, 1) and 'openssh' in bindep.stdout  # 1: listed packages are missing here
