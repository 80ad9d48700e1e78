"""A report run's files on the controller: every path checked before the first write, each file whole, an unchanged
file left alone, and no write through a link or into a directory others can write."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._report import _files_out, _fleet_report
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError


def test_files_and_their_directories_are_written_then_a_second_run_writes_nothing(tmp_path):
    files = [{'path': str(tmp_path / 'reports' / 'r.json'), 'content': '{}\n'},
             {'path': 'alpha/karpenter.yaml', 'content': 'kind: EC2NodeClass\n', 'class': 'alpha'}]
    relative = [files[0], dict(files[1])]
    assert _files_out.write_all(relative[:1], None, 0o644, check_mode=True) == [files[0]['path']]
    assert not (tmp_path / 'reports').exists()
    written = _files_out.write_all(relative[:1], None, 0o644, check_mode=False)
    written += _files_out.write_all(relative[1:], str(tmp_path / 'reports' / 'templates'), 0o644, check_mode=False)
    template = tmp_path / 'reports' / 'templates' / 'alpha' / 'karpenter.yaml'
    assert written == [files[0]['path'], str(template)]
    assert template.read_text() == 'kind: EC2NodeClass\n' and template.stat().st_mode & 0o7777 == 0o644
    assert _files_out.write_all(relative[:1], None, 0o644, check_mode=False) == []
    (tmp_path / 'reports' / 'r.json').write_text('{"old": 1}\n')
    assert _files_out.write_all(relative[:1], None, 0o644, check_mode=True) == [files[0]['path']]
    assert (tmp_path / 'reports' / 'r.json').read_text() == '{"old": 1}\n'


@pytest.mark.parametrize('path, directory', [
    ('relative/r.json', None), ('../escape.json', '{tmp}/t'), ('a/../../escape.json', '{tmp}/t'), ('{tmp}/a//b.json', None),
    ('{tmp}/dir/', None), ('/elsewhere/r.json', '{tmp}/t')])
def test_a_path_outside_its_directory_or_not_normalised_fails_before_any_file_is_written(tmp_path, path, directory):
    first = {'path': str(tmp_path / 'first.json'), 'content': 'x'}
    bad = {'path': path.format(tmp=tmp_path), 'content': 'y'}
    with pytest.raises(NodeallocError, match='nothing was written'):
        _files_out.write_all([first, bad], directory and directory.format(tmp=tmp_path), 0o644, check_mode=False)
    assert not (tmp_path / 'first.json').exists()


def test_a_path_named_twice_or_an_entry_without_content_fails_before_any_write(tmp_path):
    path = str(tmp_path / 'r.json')
    with pytest.raises(NodeallocError, match='named twice'):
        _files_out.write_all([{'path': path, 'content': 'a'}, {'path': path, 'content': 'b'}], None, 0o644, False)
    with pytest.raises(NodeallocError, match='a path and a content'):
        _files_out.write_all([{'path': path}], None, 0o644, False)
    assert not os.path.exists(path)


def test_a_link_at_a_files_path_is_refused_and_its_target_left_alone(tmp_path):
    target = tmp_path / 'target'
    target.write_text('theirs\n')
    (tmp_path / 'reports').mkdir(mode=0o755)
    (tmp_path / 'reports' / 'r.json').symlink_to(target)
    with pytest.raises(NodeallocError, match='symbolic link'):
        _files_out.write_all([{'path': str(tmp_path / 'reports' / 'r.json'), 'content': 'ours\n'}], None, 0o644, False)
    assert target.read_text() == 'theirs\n'


def test_a_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / 'shared'
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(NodeallocError, match='writable by'):
        _files_out.write_all([{'path': str(shared / 'r.json'), 'content': 'x'}], None, 0o644, False)
    assert list(shared.iterdir()) == []


def test_a_report_ansible_core_before_2_19_turned_into_data_is_written_back_as_the_reports_own_text(tmp_path):
    # ansible-core 2.16-2.18 hand a template whose whole text is JSON to the module as data (the matrix lanes, ci55).
    report = {'schema_version': 4, 'nodes': [{'host': 'n1', 'ratio': 0.5, 'ok': True, 'none': None}]}
    text = _fleet_report.render_json(report)
    path = tmp_path / 'r.json'
    _files_out.write_all([{'path': str(path), 'content': report}], None, 0o644, False)
    assert path.read_text() == text
