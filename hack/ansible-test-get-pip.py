"""Stand-in for the get-pip.py script ansible-test downloads to bootstrap pip in its sanity venvs.

ansible-test fetches get-pip from ci-files.testing.ansible.com, a host this project's machines
cannot reach (only the package registries are). It also looks for a cached copy first, at
~/.ansible/test/cache/get_pip_<version>.py, and runs it with pip's install arguments
(``pip==X --no-setuptools --no-wheel ...``). hack/run-tests.sh installs this file there: it takes
pip from the interpreter's own ensurepip (no network) and then installs what was asked for from
PyPI, which is what get-pip.py does with its embedded pip.
"""

import ensurepip
import os
import subprocess
import sys

# get-pip.py's own flags; everything else goes to `pip install`.
OWN_FLAGS = ('--no-setuptools', '--no-wheel')

# ensurepip points PIP_CONFIG_FILE at /dev/null in this process; the install below must see the
# machine's pip configuration (its CA bundle, for one), so it gets the environment from before.
environment = dict(os.environ)
ensurepip.bootstrap(upgrade=False)
subprocess.check_call([sys.executable, '-m', 'pip', 'install']
                      + [arg for arg in sys.argv[1:] if arg not in OWN_FLAGS], env=environment)
