"""Offline stand-in for the get-pip script that ansible-test downloads to bootstrap its venvs.

ansible-test fetches get-pip from a host that this project's machines cannot reach; a copy of
this file placed in ansible-test's cache makes it bootstrap pip with the interpreter's own
ensurepip, then install the pinned packages it asked for from the package index.
"""

import subprocess
import sys

# get-pip's own switches, which `pip install` does not understand.
GET_PIP_ONLY = {'--no-setuptools', '--no-wheel'}

subprocess.check_call([sys.executable, '-m', 'ensurepip', '--upgrade', '--default-pip'])
subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + [a for a in sys.argv[1:] if a not in GET_PIP_ONLY])
