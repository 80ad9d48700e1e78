"""The stand-in kubelet's own copy of the kubelet logic it mirrors, written from the kubelet's source.

Nothing here imports the collection (ansible_collections.nodealloc.kubelet): a bug in the collection's
module_utils must show up as a disagreement with this package (tests/unit/test_standin_parity.py), not be
mirrored by the test nodes. Each module cites the upstream file and function it follows.
"""
