"""Parsers for /proc files, fed with contents copied from real machines."""

from __future__ import annotations

import os

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _procfs
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import MeasurementError

# The first lines of this build machine's /proc/meminfo (Debian 12, Linux 5.10 guest).
MEMINFO = """MemTotal:       24684100 kB
MemFree:        24093812 kB
MemAvailable:   24297092 kB
Buffers:           21320 kB
Cached:           433736 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
"""


def test_meminfo_is_read_in_bytes():
    values = _procfs.parse_meminfo(MEMINFO)
    assert values['MemTotal'] == 24684100 * 1024
    assert values['MemAvailable'] == 24297092 * 1024
    assert values['HugePages_Total'] == 0  # a count, not kB


@pytest.mark.parametrize('text', ['MemTotal: 10 kB\n', 'MemFree: 1 kB\nMemAvailable: 1 kB\n', ''])
def test_meminfo_without_total_or_available_is_refused(text):
    with pytest.raises(MeasurementError, match='MemTotal|MemAvailable'):
        _procfs.parse_meminfo(text)


def test_meminfo_with_garbage_numbers_is_refused():
    with pytest.raises(MeasurementError, match='integer'):
        _procfs.parse_meminfo('MemTotal: lots kB\nMemAvailable: 1 kB\n')


def test_cpu_times_count_idle_and_iowait_as_idle():
    # /proc/stat cpu line: user nice system idle iowait irq softirq steal guest guest_nice
    busy, total = _procfs.parse_cpu_times('cpu  100 5 50 1000 20 3 2 0 40 0\ncpu0 1 1 1 1 1 1 1 1 1 1\n')
    assert total == 100 + 5 + 50 + 1000 + 20 + 3 + 2 + 0
    assert busy == total - 1000 - 20


# The first lines of this build machine's /proc/stat (a cloud VM, Linux 6.18 guest): 356 jiffies stolen.
PROC_STAT_WITH_STEAL = """cpu  57833 27 18264 477192 1152 0 486 356 0 0
cpu0 19084 6 7129 250606 289 0 230 187 0 0
"""


def test_cpu_times_leave_steal_out_of_busy():
    busy, total = _procfs.parse_cpu_times(PROC_STAT_WITH_STEAL)
    # Busy is what ran on this node: user nice system irq softirq, not the 356 jiffies another guest ran.
    assert busy == 57833 + 27 + 18264 + 0 + 486
    # The total is elapsed CPU time, stolen or not, the clock kubepods' CPU time is divided by.
    assert total == 57833 + 27 + 18264 + 477192 + 1152 + 0 + 486 + 356


@pytest.mark.parametrize('text', ['', 'cpu0 1 2 3 4\n', 'cpu 1 2\n', 'cpu a b c d\n'])
def test_cpu_times_refuse_what_the_kernel_does_not_write(text):
    with pytest.raises(MeasurementError):
        _procfs.parse_cpu_times(text)


def test_process_cgroups_v1_and_v2_lines():
    text = ('12:memory:/system.slice/kubelet.service\n4:cpu,cpuacct:/system.slice/kubelet.service\n'
            '1:name=systemd:/system.slice/kubelet.service\n0::/system.slice/kubelet.service\n')
    groups = _procfs.parse_process_cgroups(text)
    assert groups['memory'] == '/system.slice/kubelet.service'
    assert groups['cpuacct'] == '/system.slice/kubelet.service'
    assert groups[''] == '/system.slice/kubelet.service'


def test_process_cpu_ticks_survive_parentheses_in_comm():
    stat = '1234 (weird) name)) S 1 1234 1234 0 -1 4194560 100 0 0 0 700 300 0 0 20 0 1 0 100 0 0'
    assert _procfs.parse_process_cpu_ticks(stat) == 1000


def test_unreadable_file_names_the_path(tmp_path):
    with pytest.raises(MeasurementError, match=str(tmp_path / 'missing')):
        _procfs.read_text(str(tmp_path / 'missing'))


def test_huge_pages_of_every_size_are_summed(tmp_path):
    base = tmp_path / 'kernel' / 'mm' / 'hugepages'
    for name, count in (('hugepages-2048kB', 512), ('hugepages-1048576kB', 2)):
        (base / name).mkdir(parents=True)
        (base / name / 'nr_hugepages').write_text('%d\n' % count)
    assert _procfs.read_hugepages_bytes(str(tmp_path)) == 512 * 2 * 1024 * 1024 + 2 * 1024 ** 3
    assert _procfs.read_hugepages_bytes(str(tmp_path / 'absent')) == 0


def test_a_parent_is_the_ppid_line_of_status_whatever_the_name_holds(tmp_path):
    # This machine's /proc/self/status, first lines; then a name the kernel escaped ('PPid:\t9' inside comm).
    (tmp_path / '7').mkdir()
    (tmp_path / '7' / 'status').write_bytes(b'Name:\tpython3\nUmask:\t0022\nState:\tR (running)\nTgid:\t7\n'
                                            b'Ngid:\t0\nPid:\t7\nPPid:\t6412\nTracerPid:\t0\n')
    (tmp_path / '8').mkdir()
    (tmp_path / '8' / 'status').write_bytes(b'Name:\tx\\nPPid:\t9\nPPid:\t1\n')
    (tmp_path / '9').mkdir()
    (tmp_path / '9' / 'status').write_bytes(b'Name:\tkthreadd\nPPid:\t\n')
    assert [_procfs.read_process_parent(pid, str(tmp_path)) for pid in (7, 8, 9, 10)] == [6412, 1, None, None]
    assert _procfs.read_process_parent(7, str(tmp_path)) == int(_procfs.read_process_status_field(7, 'PPid', str(tmp_path)))


def test_command_lines_keep_every_argument_and_replace_what_is_not_utf8(tmp_path):
    (tmp_path / '12').mkdir()
    (tmp_path / '12' / 'cmdline').write_bytes(b'/usr/bin/python3\0\0-c\0caf\xc3\xa9 \xe2\x82\0')
    (tmp_path / '13').mkdir()
    (tmp_path / '13' / 'cmdline').write_bytes(b'')
    assert _procfs.read_cmdlines(str(tmp_path)) == {12: ['/usr/bin/python3', '', '-c', 'caf\xe9 \ufffd']}


def test_a_file_is_read_to_its_end_whatever_one_read_returns(tmp_path):
    # Longer than one read's request (_procfs._READ_SIZE), and not a multiple of it: the loop, not one read.
    whole = bytes(range(256)) * 700 + b'end'
    (tmp_path / 'long').write_bytes(whole)
    (tmp_path / 'empty').write_bytes(b'')
    assert len(whole) > 2 * _procfs._READ_SIZE
    assert _procfs.read_bytes(str(tmp_path / 'long')) == whole
    assert _procfs.read_bytes(str(tmp_path / 'empty')) == b''


def test_a_kernel_file_reads_as_open_reads_it():
    # seq_file files answer a page or so a read: mountinfo and the kernel's command line do not change while read.
    for path in ('/proc/self/mountinfo', '/proc/cmdline', '/proc/filesystems'):
        with open(path, 'rb') as handle:
            assert _procfs.read_bytes(path) == handle.read()


@pytest.mark.parametrize('name, error', [('missing', FileNotFoundError), ('a_directory', IsADirectoryError)])
def test_what_cannot_be_read_raises_as_open_does(tmp_path, name, error):
    (tmp_path / 'a_directory').mkdir()
    with pytest.raises(error):
        _procfs.read_bytes(str(tmp_path / name))
    with pytest.raises(error):
        open(str(tmp_path / name), 'rb').close()
    before = len(os.listdir('/proc/self/fd'))
    for _attempt in range(50):
        with pytest.raises(error):
            _procfs.read_bytes(str(tmp_path / name))
    assert len(os.listdir('/proc/self/fd')) == before  # no descriptor left open


def test_a_status_field_is_its_first_line_whatever_the_name_holds(tmp_path):
    # A name the kernel escaped ('\\n'), and bytes str.splitlines takes for line breaks (\x1c, \xc2\x85), kept as they are.
    (tmp_path / '7').mkdir()
    (tmp_path / '7' / 'status').write_bytes(b'Name:\tx\\nUid:\t5\x1cUid:\t6\xc2\x85NSpid:\t9 \xff\nUid:\t0\t0\t0\t0\n'
                                            b'NSpid:\t7\t1\nUid:\t1\t1\t1\t1\nRssAnon:\t  2048 kB  \n')
    fields = [_procfs.read_process_status_field(7, name, str(tmp_path)) for name in ('Uid', 'NSpid', 'RssAnon', 'Name')]
    assert fields == ['0\t0\t0\t0', '7\t1', '2048 kB', 'x\\nUid:\t5\x1cUid:\t6\x85NSpid:\t9 \udcff']
    assert _procfs.read_process_uids(7, str(tmp_path)) == (0, 0, 0, 0)
    assert _procfs.read_process_status_field(7, 'VmRSS', str(tmp_path)) is None  # no such line
    assert _procfs.read_process_status_field(8, 'Uid', str(tmp_path)) is None  # gone


@pytest.mark.parametrize('directory', ['/sys/fs/cgroup/memory', '/', '', 'relative', 'trailing/', '//', '/a//'])
@pytest.mark.parametrize('relative', ['kubepods.slice', '', 'a/b', 'a/', '/abs', '//abs', '.', 'sp ace/\udcff'])
def test_a_path_is_joined_as_os_path_join_joins_it(directory, relative):
    assert _procfs.joined(directory, relative) == os.path.join(directory, relative)
