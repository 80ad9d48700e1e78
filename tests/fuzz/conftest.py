"""The fuzz suite's settings (issue 35 item 6): every parser of node- or user-supplied text, plan() and the renderers.

A failure is an exception outside the collection's error types, an example that spends more than 100 ms of CPU
(cpu_deadline.py: CPU, not wall time), or a result out of range. Derandomized: the same examples on every run, so a
failure reproduces and the run time is stable (about half a minute on a quiet machine, docs/testing.md);
``--hypothesis-seed`` or ``NODEALLOC_FUZZ_EXAMPLES`` explore more.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

MAX_EXAMPLES = int(os.environ.get('NODEALLOC_FUZZ_EXAMPLES', '200'))

settings.register_profile(
    'nodealloc-fuzz', max_examples=MAX_EXAMPLES, deadline=None,  # cpu_deadline.py instead of wall time
    derandomize=True, database=None, print_blob=True,
    # Large generated documents are the point here, not a slow-generation accident.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile('nodealloc-fuzz')
