"""The node's own files, which the kernel writes and a node's users partly name (a process's name, a cgroup's, a mount
point): any text gives an answer or the collection's error, fast; the readers that look at only a few lines (issue 34:
zoneinfo's ``low`` lines, /proc/stat's first line, one ``status`` field) answer as a reading of every line does."""

from __future__ import annotations

import os

from hypothesis import example, given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import (
    _cgroup, _cpu_guarantee, _memory_accounting, _procfs)

# Every line break str.splitlines knows, the separators these files use, and the words the parsers look for.
PIECES = ['\n', '\r', '\r\n', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x85', '\u2028', '\u2029', ' ', '\t', '\x1f',
          '\xa0', ':', ' - ', 'low', 'low ', '  low  12', 'lowest', 'cpu', 'cpu ', 'cpu0 ', '1', '-1', '99999999999999999999',
          'x', '\ufffd', 'kB', ' kB', 'MemTotal:', 'MemAvailable:', 'cgroup', 'cgroup2', '/sys/fs/cgroup/memory', '\\040',
          'memory', 'cpuacct', 'some avg10=1.5 total=7', 'full', '=', ',', '0::/', '1:memory:/a']
node_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=40).map(''.join)
# Lines of the files' own shapes, and others, ended by any line break: where a reader of a few lines could part from
# a reading of every line.
BREAKS = st.sampled_from(['\n', '\n', '\n', '\r', '\r\n', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x85', '\u2028',
                          '\u2029', ''])
SPACES = st.text(' \t\x1f\xa0', max_size=3)
NUMBERS = st.one_of(st.integers(-5, 10 ** 20).map(str), st.sampled_from(['x', '1.5', '\u0665', '']))


def shaped_lines(word, others):
    line = st.one_of(st.tuples(SPACES, st.just(word), SPACES.map(lambda s: s or ' '), NUMBERS,
                               st.lists(st.tuples(st.just(' '), NUMBERS).map(''.join), max_size=9).map(''.join),
                               SPACES).map(''.join),
                     st.sampled_from(others), st.text(max_size=6))
    return st.lists(st.tuples(line, BREAKS).map(''.join), max_size=12).map(''.join)


zoneinfo_text = st.one_of(node_text, shaped_lines('low', ['Node 0, zone   Normal', '  pages free     5', '        min 3',
                                                          '        high 9', '  lowmem_reserve[]: 0 0']))
stat_text = st.one_of(node_text, shaped_lines('cpu', ['cpu0 1 2 3 4 5 6 7 8', 'intr 9 8 7', 'ctxt 5', 'x']))


def low_pages_read_line_by_line(text):
    """Every line split (the reading parse_zoneinfo_low_pages skips), in another shape than its own."""
    values = [fields[1] for fields in (line.split() for line in text.splitlines())
              if len(fields) == 2 and fields[0] == 'low']
    try:
        numbers = [int(value) for value in values]
    except ValueError:
        return None
    return sum(numbers) if numbers else None


@given(zoneinfo_text)
@example('Node 0\x1c        low 5\n  low\t7\r\n')  # a line break str.splitlines knows inside a '\n' line
@cpu_deadline
def test_zoneinfo_low_lines_as_every_line_reads_them(text):
    assert _memory_accounting.parse_zoneinfo_low_pages(text) == low_pages_read_line_by_line(text)


def answer_or_error(parse, *args):
    try:
        return parse(*args)
    except NodeallocError as exc:
        return type(exc)


@given(stat_text)
@example('cpu  10 0 5 100 1 0 0 0\x85intr 9 8\ncpu0 1 2 3 4\n')
@example('\rcpu 1 2 3 4\n')
@cpu_deadline
def test_the_cpu_line_as_every_line_reads_it(text):
    first_cpu_line = next((line.split() for line in text.splitlines() if line.split()[:1] == ['cpu']), None)
    expected = (answer_or_error(_procfs._busy_and_total, first_cpu_line, 'stat') if first_cpu_line
                else answer_or_error(_procfs.parse_cpu_times, ''))
    assert answer_or_error(_procfs.parse_cpu_times, text, 'stat') == expected


STATUS_NAMES = ['Uid', 'NSpid', 'RssAnon', 'PPid', 'Name']
status_raw = st.one_of(st.binary(max_size=200), st.lists(st.tuples(
    st.one_of(st.sampled_from(STATUS_NAMES).map(str.encode), st.binary(max_size=4)),
    st.sampled_from([b':', b':\t', b': ', b'', b' :']),
    st.one_of(st.sampled_from([b'0\t0\t0\t0', b'12 kB', b'7\t1', b'x\\nUid:\t5', b'\xff\xfe']), st.binary(max_size=6)),
    st.sampled_from([b'\n', b'\n', b'\r', b'\x1c', b'\xc2\x85', b'\r\n', b''])).map(b''.join), max_size=10).map(b''.join))


@given(status_raw, st.sampled_from(STATUS_NAMES))
@cpu_deadline
def test_a_status_field_as_every_line_reads_it(tmp_path_factory, raw, name):
    directory = tmp_path_factory.getbasetemp() / 'fuzz-proc' / '7'
    directory.mkdir(parents=True, exist_ok=True)
    (directory / 'status').write_bytes(raw)
    lines = [line.partition(':') for line in _procfs.decode(raw).split('\n')]
    first = dict(reversed([(key, value.strip()) for key, colon, value in lines if colon]))
    assert _procfs.read_process_status_field(7, name, str(directory.parent)) == first.get(name)


@given(st.text(max_size=12), st.text(max_size=12))
@cpu_deadline
def test_a_path_joined_as_os_path_join_joins_it(directory, relative):
    assert _procfs.joined(directory, relative) == os.path.join(directory, relative)


@given(node_text)
@cpu_deadline
def test_every_other_node_parser_answers_or_says_why(text):
    for parse, args in ((_procfs.parse_meminfo, ()), (_cgroup.parse_flat_keyed, ('memory.stat',)),
                        (_cgroup.parse_mountinfo, ()), (_cgroup.layout_from_mountinfo, ()),
                        (_procfs.parse_process_cgroups, ()), (_cpu_guarantee.parse_pressure, ())):
        answer_or_error(parse, text, *args)
    try:
        _procfs.parse_process_cpu_ticks(text)
    except (IndexError, ValueError):
        pass  # read_process_cpu_ticks' caller takes these for a process gone or unreadable


# containerd's config (_containerd_config.root): any text gives an absolute path or the collection's error, and a root
# line hidden behind a line break the reader does not split on is never taken for another.
CONTAINERD_PIECES = ['root', 'root ', '"root"', "'root'", ' = ', '=', '"', "'", '/var/lib/containerd', '/data', 'x',
                     '\\', '\\"', '#', '[grpc]', '[', ']', 'version = 2', '"""', '\n', '\r\n', '\r', '\x85', '\u2028',
                     ' ', '\t', '\x00', '\x1f']
containerd_text = st.lists(st.one_of(st.sampled_from(CONTAINERD_PIECES), st.text(max_size=6)), max_size=40).map(''.join)


@given(containerd_text)
@example('root = "/a"\x85root = "/b"\n')
@cpu_deadline
def test_containerd_root_is_an_absolute_path_or_the_collections_error(text):
    from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _containerd_config
    try:
        found = _containerd_config.root(text)
    except NodeallocError:
        return
    assert found.startswith('/') and '\x00' not in found and '\n' not in found
