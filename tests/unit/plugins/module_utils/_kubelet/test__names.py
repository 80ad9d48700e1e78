"""_names: the Kubernetes name grammars, checked against apimachinery's own test cases, and ``printable``.

The good and bad values are apimachinery's (kubernetes/kubernetes
staging/src/k8s.io/apimachinery/pkg/util/validation/validation_test.go at 008b3652, TestIsValidLabelValue and
TestIsDNS1123Subdomain), copied as they stand there.
"""

from __future__ import annotations

import pytest

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _names

# TestIsValidLabelValue
LABEL_VALUE_GOOD = ['simple', 'now-with-dashes', '1-starts-with-num', 'end-with-num-1', '1234', 'a' * 63, '']
LABEL_VALUE_BAD = ['nospecialchars%^=@', 'Tama-nui-te-rā.is.Māori.sun', '\\backslashes\\are\\bad', '-starts-with-dash',
                   'ends-with-dash-', '.starts.with.dot', 'ends.with.dot.', 'a' * 64]

# TestIsDNS1123Subdomain
SUBDOMAIN_GOOD = [
    'a', 'ab', 'abc', 'a1', 'a-1', 'a--1--2--b',
    '0', '01', '012', '1a', '1-a', '1--a--b--2',
    'a.a', 'ab.a', 'abc.a', 'a1.a', 'a-1.a', 'a--1--2--b.a',
    'a.1', 'ab.1', 'abc.1', 'a1.1', 'a-1.1', 'a--1--2--b.1',
    '0.a', '01.a', '012.a', '1a.a', '1-a.a', '1--a--b--2',
    '0.1', '01.1', '012.1', '1a.1', '1-a.1', '1--a--b--2.1',
    'a.b.c.d.e', 'aa.bb.cc.dd.ee', '1.2.3.4.5', '11.22.33.44.55',
    'a' * 253,
]
SUBDOMAIN_BAD = [
    '', 'A', 'ABC', 'aBc', 'A1', 'A-1', '1-A',
    '-', 'a-', '-a', '1-', '-1',
    '_', 'a_', '_a', 'a_b', '1_', '_1', '1_2',
    '.', 'a.', '.a', 'a..b', '1.', '.1', '1..2',
    ' ', 'a ', ' a', 'a b', '1 ', ' 1', '1 2',
    'A.a', 'aB.a', 'ab.A', 'A1.a', 'a1.A',
    'A.1', 'aB.1', 'A1.1', '1A.1',
    '0.A', '01.A', '012.A', '1A.a', '1a.A',
    'A.B.C.D.E', 'AA.BB.CC.DD.EE', 'a.B.c.d.e', 'aa.bB.cc.dd.ee',
    'a@b', 'a,b', 'a_b', 'a;b',
    'a:b', 'a%b', 'a?b', 'a$b',
    'a' * 254,
]

# What Go's regexp.MatchString("^...$") refuses and Python's re.match('...$') would take: a final newline. And the
# values issue 44 was measured with.
HOSTILE = ['batch\n', 'batch\nauthentication:\n  anonymous:\n    enabled: true', 'batch\r', 'batch\x85x', 'a\u2028b',
           'b\x00', 'x' * 100000 + '!']


@pytest.mark.parametrize('value', LABEL_VALUE_GOOD)
def test_apimachinerys_good_label_values_pass(value):
    assert _names.is_label_value(value)


@pytest.mark.parametrize('value', LABEL_VALUE_BAD + HOSTILE)
def test_apimachinerys_bad_label_values_fail(value):
    assert not _names.is_label_value(value) and not _names.is_class_name(value)


def test_a_class_name_is_a_label_value_that_is_not_empty():
    assert not _names.is_class_name('') and not _names.is_class_name(None) and not _names.is_class_name(3)
    assert _names.is_class_name('16gib-4cpu') and _names.is_class_name('General_Purpose.v2')


@pytest.mark.parametrize('value', SUBDOMAIN_GOOD)
def test_apimachinerys_good_subdomains_are_node_names(value):
    assert _names.is_node_name(value)


@pytest.mark.parametrize('value', SUBDOMAIN_BAD + HOSTILE)
def test_apimachinerys_bad_subdomains_are_not_node_names(value):
    assert not _names.is_node_name(value)


@pytest.mark.parametrize('value', HOSTILE + ['\t', '\x1b[31m', '\ufeff', '\udcff', '\u2029', '\r\n'])
def test_printable_text_holds_no_line_break_and_no_control_character(value):
    text = _names.printable(value)
    assert text.isprintable() and len(text.splitlines()) <= 1
    assert _names.printable('batch-1.example_2') == 'batch-1.example_2'  # a name that passes is shown as it is


def test_shown_cuts_and_quotes_what_a_reason_names():
    assert _names.shown('a\nb') == "'a\\nb'"
    assert _names.shown('x' * 500) == "'%s ...'" % ('x' * _names.SHOWN_CHARACTERS)
    assert _names.shown(None) == 'a NoneType'
