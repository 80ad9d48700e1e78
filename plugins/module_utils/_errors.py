# Private to nodealloc.kubelet: not a public API, may change without notice.
"""Errors the pure logic raises; modules turn them into ``fail_json`` messages."""

from __future__ import annotations


class NodeallocError(Exception):
    """Base class: the message is written for the operator who reads the task output."""


class MeasurementError(NodeallocError):
    """A kernel file could not be read or did not hold what the kernel writes there."""

    def __init__(self, path, expected, cause=None):
        self.path = path
        self.expected = expected
        message = '%s: expected %s' % (path, expected)
        if cause is not None:
            message += ' (%s)' % cause
        super().__init__(message)


class LayoutError(NodeallocError):
    """The cgroup layout is not one this collection recognises."""


class ConfigError(NodeallocError):
    """A kubelet configuration file is malformed or not a KubeletConfiguration."""

    def __init__(self, path, problem):
        self.path = path
        self.problem = problem
        super().__init__('%s: %s' % (path, problem))


class MissingLibraryError(NodeallocError):
    """A Python library the requested feature needs is not installed on the node."""

    def __init__(self, library, reason):
        self.library = library
        self.reason = reason
        super().__init__('%s is required %s' % (library, reason))


class ParseError(NodeallocError, ValueError):
    """Text from a node or a user (a quantity, a duration, a threshold, a history line) is not in the form its reader
    takes, or is out of the range the collection can hold. A ``ValueError`` too, for the callers that catch that."""


class ValidationError(ValueError):
    """A kubelet validation rule (_kubelet/_config_rules) refused the configuration: names the field and the rule."""

    def __init__(self, rule, field, message):
        self.rule = rule
        self.field = field
        super().__init__('%s: %s (rule %s)' % (field, message, rule))
