# Copyright (c) nodealloc.kubelet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Private doc fragment of nodealloc.kubelet.

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
'''

    # Check mode in full, no diff, a second run answers as the first: the action plugins that run on the controller
    # alone and change nothing anywhere (host_unreachable, prometheus_history, with ON_CONTROLLER's note) and
    # report_files, whose files are the run's output.
    FULL_CHECK_NO_DIFF = r'''
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  idempotent:
    support: full
'''

    ON_CONTROLLER = r'''
options: {}
notes:
  - This is an action plugin; it runs on the controller and never connects to the host.
'''

    INFO_MODULE = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
  idempotent:
    support: full
    details:
      - This action does not modify state.
'''
