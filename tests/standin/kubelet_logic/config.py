"""Reading the kubelet's config file and drop-ins, as the kubelet does before it validates anything.

Upstream (kubernetes/kubernetes):
* pkg/kubelet/kubeletconfig/util/codec/codec.go ``DecodeKubeletConfiguration``: YAML or JSON (YAML is
  turned into JSON first, sigs.k8s.io/yaml); ``apiVersion: kubelet.config.k8s.io/v1beta1`` and
  ``kind: KubeletConfiguration`` are required; strict decoding first, and for v1beta1 an unknown field
  falls back to lenient decoding with the log line "Using lenient decoding as strict decoding failed";
  a field of the wrong type fails both; drop-ins are loaded as JSON with only their group/version/kind
  checked (configfiles LoadIntoJSON), and the merged result is decoded once;
* cmd/kubelet/app/server.go ``mergeKubeletConfigurations``: every ``*.conf`` under ``--config-dir``,
  walked in lexical order (filepath.WalkDir, subdirectories included), merged into the config with a JSON
  merge patch (github.com/evanphx/json-patch ``MergePatch``, RFC 7386).
"""

from __future__ import annotations

import os

import yaml

API_VERSION = 'kubelet.config.k8s.io/v1beta1'
KIND = 'KubeletConfiguration'
STRING_MAP_FIELDS = ('kubeReserved', 'systemReserved', 'evictionHard', 'evictionSoft', 'evictionSoftGracePeriod',
                     'evictionMinimumReclaim')
STRING_FIELDS = ('kubeReservedCgroup', 'systemReservedCgroup', 'systemCgroups', 'cgroupRoot', 'cgroupDriver',
                 'reservedSystemCPUs', 'healthzBindAddress')
DROP_IN_EXTENSION = '.conf'


class ConfigError(ValueError):
    pass


def merge_patch(target, patch):
    """RFC 7386 section 2 MergePatch: objects merge key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def drop_in_files(directory):
    """filepath.WalkDir order: entries of a directory sorted by name, descending into directories."""
    found = []
    if not os.path.isdir(directory):
        return found  # a stand-in simplification: the kubelet fails to walk a missing directory
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            found.extend(drop_in_files(path))
        elif os.path.splitext(name)[1] == DROP_IN_EXTENSION:
            found.append(path)
    return found


def read(path):
    """One file as an object, its group/version/kind checked (configfiles fsLoader.LoadIntoJSON)."""
    try:
        with open(path, encoding='utf-8') as handle:
            data = yaml.safe_load(handle.read())
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError('failed to load Kubelet config file %s, error: %s' % (path, exc))
    if not isinstance(data, dict):
        raise ConfigError('failed to decode %s: not an object' % path)
    if data.get('apiVersion') != API_VERSION or data.get('kind') != KIND:
        raise ConfigError('failed to decode %s: no kind "%s" is registered for version "%s"'
                          % (path, data.get('kind'), data.get('apiVersion')))
    return data


def _type_error(where, value, field, go_type):
    return ConfigError('%s: json: cannot unmarshal %s into Go struct field KubeletConfiguration.%s of type %s'
                       % (where, type(value).__name__, field, go_type))


def check_types(data, where):
    """Decoding into the Go struct: a field of the wrong type fails, whatever the decoding mode."""
    for field in STRING_MAP_FIELDS:
        value = data.get(field)
        if value is not None and (not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())):
            raise _type_error(where, value, field, 'map[string]string')
    for field in STRING_FIELDS:
        value = data.get(field)
        if value is not None and not isinstance(value, str):
            raise _type_error(where, value, field, 'string')
    enforce = data.get('enforceNodeAllocatable')
    if enforce is not None and (not isinstance(enforce, list) or not all(isinstance(v, str) for v in enforce)):
        raise _type_error(where, enforce, 'enforceNodeAllocatable', '[]string')
    factor = data.get('memoryThrottlingFactor')
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))):
        raise _type_error(where, factor, 'memoryThrottlingFactor', 'float64')
    port = data.get('healthzPort')
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise _type_error(where, port, 'healthzPort', 'int32')


def load(config_path, config_dir, known_fields, log):
    """The merged config and the files it came from (main file first, then drop-ins in order).

    The main file is decoded strictly, then leniently for unknown fields (``log(event, **fields)`` records
    the fallback); drop-ins are merged as JSON and the result is decoded into the struct once.
    """
    config = read(config_path)
    unknown = sorted(set(config) - known_fields)
    if unknown:
        log('lenient-decoding', file=config_path,
            message='Using lenient decoding as strict decoding failed: strict decoding error: unknown field(s) %s'
            % ', '.join('"%s"' % f for f in unknown))
    check_types(config, 'failed to decode %s' % config_path)
    sources = [config_path]
    if config_dir:
        for path in drop_in_files(config_dir):
            config = merge_patch(config, read(path))
            sources.append(path)
        if len(sources) > 1:
            check_types(config, 'failed to merge the drop-in configuration from %s' % config_dir)
    return config, sources
