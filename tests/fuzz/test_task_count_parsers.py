"""The PID readers (_node/_task_count): any text in /proc/loadavg, pid_max, threads-max or pids.current gives a count in the
kernel's range or the collection's error, fast; a count given is the file's own number."""

from __future__ import annotations

from hypothesis import example, given, strategies as st

from ansible_collections.nodealloc.kubelet.tests.fuzz.cpu_deadline import cpu_deadline
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import NodeallocError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._node import _task_count

PIECES = ['0', '1', '7', '135', '32768', '4194304', '1073741823', '1073741824', '99999999999999999999', '-1', '+1',
          '/', ' ', '  ', '\t', '\n', '\r', '\x85', '\u2028', '\u0661', '\uff11', '0.68', '1.53', 'max', '3/135',
          '21666', '\x00', 'x']
pid_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=30).map(''.join)
loadavg_shaped = st.tuples(st.sampled_from(['0.68 1.53 4.24 ', '0 0 0 ', '1 2 ']), pid_text,
                           st.sampled_from([' 21666\n', '\n', ' 1 2\n', ''])).map(''.join)


@given(st.one_of(pid_text, loadavg_shaped))
@example('0.68 1.53 4.24 3/135 21666\n')
@example('0.68 1.53 4.24 \u0663/\u0661\u0663\u0665 21666\n')
@cpu_deadline
def test_loadavg_tasks_are_a_count_or_the_collections_error(text):
    try:
        total = _task_count.parse_loadavg_tasks(text)
    except NodeallocError:
        return
    assert isinstance(total, int) and 1 <= total <= _task_count.MAX_TASKS
    assert ('/%d ' % total) in text


@given(pid_text)
@example('32768\n')
@example('\u0663\u0662')
@cpu_deadline
def test_a_count_file_is_its_number_or_the_collections_error(text):
    try:
        value = _task_count.parse_count(text, 'pid_max')
    except NodeallocError:
        return
    assert isinstance(value, int) and 0 <= value <= _task_count.MAX_TASKS
    assert text.rstrip('\n') == str(value).zfill(len(text.rstrip('\n')))
