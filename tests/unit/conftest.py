"""Ansible's collection loader installed before a unit test imports the collection, as Ansible itself imports it.

Imported first from pytest's pythonpath, ansible_collections would be a plain namespace package, and Ansible's plugin
loader could not load the collection's plugins from it (an inventory plugin by name, say). pytest-ansible installs the
loader where it is installed (tests/requirements.txt); make matrix's venvs have no pytest-ansible, which refuses
ansible-core 2.17.
"""

from pathlib import Path

from ansible.plugins.loader import init_plugin_loader
from ansible.utils.collection_loader import AnsibleCollectionConfig

if AnsibleCollectionConfig.collection_finder is None:
    init_plugin_loader([str(Path(__file__).resolve().parents[2] / '.build' / 'collections')])
