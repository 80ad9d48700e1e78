# Private to nodealloc.kubelet: not a public API, may change without notice.
"""The Kubernetes name grammars a value must match before it becomes a file name, a template, a header or a query.

Mirrors k8s.io/apimachinery pkg/util/validation/validation.go (kubernetes/kubernetes
staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go at 03014f48):

* ``IsValidLabelValue``: ``labelValueFmt`` = ``(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?``, at most
  ``LabelValueMaxLength`` = 63 characters. A node class read from a label (``kube_node_labels``) is one; so is the
  size class we name ourselves (``<GiB>gib-<cpus>cpu``). A class name must also be non-empty, which the grammar
  allows for a label value but a directory and a template's name do not.
* ``IsDNS1123Subdomain``: ``dns1123SubdomainFmt`` = ``[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*``,
  at most ``DNS1123SubdomainMaxLength`` = 253 characters: what the API server accepts as a Node's name
  (pkg/apis/core/validation ValidateNodeName is NameIsDNSSubdomain).

Go's ``regexp`` ``^...$`` matches the whole text (``$`` is not Python's "before a final newline"): here
``fullmatch``. The length is checked first, so no text longer than the limit reaches the regular expression; both
expressions have one way to match each character (a ``.`` ends a DNS label, nothing else does), so matching is
linear. Characters outside ASCII never match: the classes are spelled as ASCII ranges.

``printable`` is the one way a value that is not such a name is put on a line a person or a parser reads (a
template's header comment, a reason): every character that is not printable (line breaks, including YAML 1.1's
U+0085, U+2028 and U+2029, and every control character) becomes its Python escape, so the value stays on its line.
"""

from __future__ import annotations

import re

LABEL_VALUE_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
_LABEL_VALUE = re.compile(r'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')
_DNS1123_SUBDOMAIN = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
# How much of a refused value a reason shows.
SHOWN_CHARACTERS = 80


def is_label_value(value):
    """apimachinery IsValidLabelValue: the empty string included."""
    return isinstance(value, str) and len(value) <= LABEL_VALUE_MAX_LENGTH and _LABEL_VALUE.fullmatch(value) is not None


def is_class_name(value):
    """A node class name we may put in a directory, a template, a header or a query: a non-empty label value."""
    return bool(value) and is_label_value(value)


def is_node_name(value):
    """apimachinery IsDNS1123Subdomain, as a Node's name is checked."""
    return (isinstance(value, str) and len(value) <= DNS1123_SUBDOMAIN_MAX_LENGTH
            and _DNS1123_SUBDOMAIN.fullmatch(value) is not None)


def printable(value, limit=None):
    """``value`` as text on one line: each character that is not printable as its escape (``\\n``, ``\\x85``,
    ``\\u2028``, ...); with ``limit``, at most that many characters of it, then ' ...'."""
    text = value if isinstance(value, str) else str(value)
    cut = text if limit is None else text[:limit]
    shown = ''.join(char if char.isprintable() else repr(char)[1:-1] for char in cut)
    return shown + (' ...' if limit is not None and len(text) > limit else '')


def shown(value):
    """A refused value as a reason names it: quoted, escaped, at most SHOWN_CHARACTERS of it."""
    if not isinstance(value, str):
        return 'a %s' % type(value).__name__
    return "'%s'" % printable(value, SHOWN_CHARACTERS)


CLASS_NAME_RULE = ('not a Kubernetes label value (1 to 63 characters of A-Z, a-z, 0-9, "-", "_" and ".", '
                   'beginning and ending with a letter or digit)')
NODE_NAME_RULE = ('not a Kubernetes node name (a DNS-1123 subdomain: at most 253 characters of a-z, 0-9, "-" and ".", '
                  'each dot-separated part beginning and ending with a letter or digit)')
