# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared tags spelled as the cluster stores them (_tag_style): asked of PVE only when a capital letter is in play."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils._tag_style import as_stored
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import VmSpec


class OptionsStub:
    """GET /cluster/options as pve-manager API2/Cluster.pm get_options answers any user; counts the reads."""

    def __init__(self, style=None):
        self.style, self.reads = style, 0

    def get(self, path, context=None, **params):
        assert path == '/cluster/options'
        self.reads += 1
        return {'allowed-tags': [], **({'tag-style': self.style} if self.style is not None else {})}


def spec(tags):
    return VmSpec.from_params({'name': 'web', 'tags': tags})


def test_lower_case_tags_need_no_question():
    stub = OptionsStub()
    assert as_stored(stub, spec(['web', 'db']), 'db;web').tags == {'web', 'db'} and stub.reads == 0
    assert as_stored(stub, VmSpec.from_params({'name': 'web'}), 'Web').tags is None and stub.reads == 0


def test_a_capital_letter_is_lower_cased_under_the_default_tag_style_and_kept_when_case_sensitive():
    assert as_stored(OptionsStub(), spec(['Web']), None).tags == {'web'}
    assert as_stored(OptionsStub({'shape': 'circle'}), spec(['Web']), None).tags == {'web'}
    assert as_stored(OptionsStub({'case-sensitive': 1}), spec(['Web', 'db']), None).tags == {'Web', 'db'}
    # A current tag with a capital letter (a case-sensitive cluster) is enough to ask.
    stub = OptionsStub({'case-sensitive': 1})
    assert as_stored(stub, spec(['web']), 'Web').tags == {'web'} and stub.reads == 1
