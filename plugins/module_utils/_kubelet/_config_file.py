# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Load a KubeletConfiguration file and its drop-in directory the way the kubelet does.

* The file may be YAML or JSON (the kubelet decodes YAML by converting it to
  JSON, sigs.k8s.io/yaml); JSON needs only the standard library here, YAML
  needs PyYAML on the node.
* ``apiVersion`` must be ``kubelet.config.k8s.io/v1beta1`` and ``kind``
  ``KubeletConfiguration``: the only version that carries this kind
  (k8s.io/kubelet/config/v1beta1, pkg/kubelet/apis/config/scheme).
* Drop-ins: every file ending in ``.conf`` under ``--config-dir``, walked in
  lexical order (``filepath.WalkDir``), merged with a JSON merge patch
  (cmd/kubelet/app/server.go ``mergeKubeletConfigurations``, beta and on by
  default since Kubernetes 1.30).
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet import _defaults
from ansible_collections.nodealloc.kubelet.plugins.module_utils._errors import ConfigError, MissingLibraryError
from ansible_collections.nodealloc.kubelet.plugins.module_utils._kubelet._json_merge_patch import merge_patch

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - exercised on nodes without PyYAML
    yaml = None
    HAS_YAML = False

API_VERSION = _defaults.API_VERSION
KIND = _defaults.KIND
DROP_IN_SUFFIX = _defaults.DROP_IN_SUFFIX
# A KubeletConfiguration nests four deep (evictionHard, a signal, its value); a file nested past this or holding more
# nodes than this is refused with a ConfigError before anything walks it (issue 35: deep nesting raised
# RecursionError, YAML aliases can multiply a small file).
MAX_DEPTH = 64
MAX_NODES = 100000


_BRACKETS = re.compile(r'[\[\]{}]')
# "- - - x" (or "? ? x") opens a block collection per indicator on one line.
_BLOCK_INDICATORS = re.compile(r'(?:[-?][ \t]+){%d}' % (MAX_DEPTH + 1))


def _check_flow_depth(text, path):
    """ConfigError when YAML flow brackets open more than MAX_DEPTH deep, or block indicators on one line do: PyYAML's
    scanner takes seconds (quadratic in the depth) before its parser runs out of stack. Brackets in strings and
    comments count too: a file would need more than MAX_DEPTH unclosed ones there to be refused."""
    if _BLOCK_INDICATORS.search(text):
        raise ConfigError(path, 'nested more than %d levels deep' % MAX_DEPTH)
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in '[{' else -1
        if depth > MAX_DEPTH:
            raise ConfigError(path, 'nested more than %d levels deep' % MAX_DEPTH)


def _check_shape(data, path):
    """ConfigError when ``data`` nests deeper than MAX_DEPTH or holds more than MAX_NODES values (walked iteratively)."""
    pending, nodes = [(data, 1)], 0
    while pending:
        value, depth = pending.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise ConfigError(path, 'nested more than %d levels deep' % MAX_DEPTH)
        if nodes > MAX_NODES:
            raise ConfigError(path, 'more than %d values (YAML aliases?)' % MAX_NODES)
        if isinstance(value, dict):
            pending.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)


def detect_format(text):
    """'json' when the document is a JSON object, else 'yaml'."""
    return 'json' if text.lstrip().startswith('{') else 'yaml'


def parse_document(text, path):
    """Parse one config document into a dict; raises ConfigError or MissingLibraryError."""
    fmt = detect_format(text)
    if fmt == 'json':
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(path, 'invalid JSON: %s' % exc)
        except RecursionError:
            raise ConfigError(path, 'nested more than %d levels deep' % MAX_DEPTH)
    else:
        if not HAS_YAML:
            raise MissingLibraryError('PyYAML', 'on the node to read the YAML kubelet config %s' % path)
        _check_flow_depth(text, path)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(path, 'invalid YAML: %s' % str(exc).replace('\n', ' '))
        except RecursionError:
            raise ConfigError(path, 'nested more than %d levels deep' % MAX_DEPTH)
        except ValueError as exc:  # PyYAML's int() of a timestamp or a number past Python's digit limit
            raise ConfigError(path, 'invalid YAML: %s' % exc)
    if data is None:
        data = {}
    _check_shape(data, path)
    if not isinstance(data, dict):
        raise ConfigError(path, 'expected a mapping (a KubeletConfiguration object), found %s'
                          % type(data).__name__)
    return data, fmt


def check_kind(data, path):
    api_version = data.get('apiVersion')
    kind = data.get('kind')
    if kind != KIND:
        raise ConfigError(path, 'kind is %r, expected %r' % (kind, KIND))
    if api_version != API_VERSION:
        raise ConfigError(path, 'apiVersion is %r, expected %r' % (api_version, API_VERSION))


def read_file(path):
    try:
        with open(path, 'r', encoding='utf-8') as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(path, 'cannot read: %s' % (exc.strerror or exc))
    except UnicodeDecodeError:
        raise ConfigError(path, 'not UTF-8 text')


def load_config(path):
    """Load and check one KubeletConfiguration file: returns (dict, format, text)."""
    text = read_file(path)
    data, fmt = parse_document(text, path)
    check_kind(data, path)
    return data, fmt, text


def drop_in_files(config_dir):
    """The drop-in files the kubelet would merge, in the order it merges them."""
    found = []
    for directory, subdirs, files in os.walk(config_dir):
        subdirs.sort()
        for name in files:
            if os.path.splitext(name)[1] == DROP_IN_SUFFIX:
                found.append(os.path.join(directory, name))
    # WalkDir visits entries in lexical order of the full path.
    return sorted(found)


def load_effective_config(path=None, config_dir=None):
    """Merge the main file and its drop-ins: returns (merged dict, [source files])."""
    merged = {}
    sources = []
    if path:
        merged, _fmt, _text = load_config(path)
        sources.append(path)
    if config_dir:
        if not os.path.isdir(config_dir):
            raise ConfigError(config_dir, '--config-dir is not a directory')
        for drop_in in drop_in_files(config_dir):
            data, _fmt, _text = load_config(drop_in)
            merged = merge_patch(merged, data)
            sources.append(drop_in)
    return merged, sources
