# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What must hold after every round of the chaos campaign, however the round ended. Each violation is a line
'invariant: what was found'.

- unique names: no two guests share a name;
- nothing left behind: once a round succeeded, every guest is declared, seeded, or a retired template that a linked
  clone still uses (no build VM, no replaced or pruned machine);
- human notes: the Notes a human wrote on each VM (written between rounds, above the provision block) stay
  byte-identical, and a VM still declared is never destroyed;
- true records: every hash in a provision block names a version of that file whose last run in that guest ended
  (the guest's ~/chaos-provision.log); a clone carries its template's block until its own provisioning rewrites it,
  so an entry for a file the VM does not declare may have run in the template's build instead;
- untouched guests: the protected and the foreign (untagged) guest keep their config and power state;
- templates in use: the base of every linked clone, and the lab's base template, exist as templates;
- replacements: a machine replaced in a round is gone only if its successor runs with every declared file recorded.
"""

from __future__ import annotations

import collections
import re

import fleet as fleet_module

from ansible_collections.puls.proxmox.plugins.module_utils import _notes

LINKED_BASE = re.compile(r'\bbase-(\d+)-disk-\d+/')
HUMAN_NOTES = 'Owner: team web ({0}, VM {1}).\nDo not reboot during business hours; ask #web-ops first.'
SEEDED = (fleet_module.PROTECTED, fleet_module.FOREIGN, 'ubuntu-24.04-cloud')


def human_part(notes):
    """The Notes without the provision block, as stored."""
    span = _notes.parse(notes).span
    text = notes or ''
    if span:
        text = text[: span[0]] + text[span[1] :]
    return _notes.normalize(text)


class Checker:
    def __init__(self, lab, fleet):
        self.lab = lab
        self.fleet = fleet
        self.api = fleet.api
        # How often each invariant was checked (one guest, record or pair at a time).
        self.checks = collections.Counter()
        # vmid -> (name, human part of its Notes) written by write_human_notes().
        self.human = {}
        self.untouched = {name: self._state(name) for name in (fleet_module.PROTECTED, fleet_module.FOREIGN)}
        self.guests = self._guests()
        # VMIDs of every template seen: where the files a clone inherited the record of ran.
        self.templates = set()
        self._figures = {}

    # ------------------------------------------------------------ the cluster now

    def _guests(self):
        """name -> list of guests (cluster/resources entries) with that name."""
        guests = collections.defaultdict(list)
        for entry in self.api.cluster_vms():
            guests[entry.get('name') or ''].append(entry)
        return guests

    def _config(self, entry):
        return self.api.vm_config(entry['node'], entry['vmid'])

    def _state(self, name):
        (entry,) = self._guests()[name]
        return self._config(entry), entry.get('status')

    def write_human_notes(self):
        """A human adds Notes above the provision block of every declared VM that has none from us yet."""
        for name in self.fleet.vms:
            for entry in self._guests().get(name, []):
                vmid = int(entry['vmid'])
                if vmid in self.human or entry.get('template'):
                    continue
                notes = self._config(entry).get('description', '')
                text = HUMAN_NOTES.format(name, vmid)
                self.api.put('/nodes/{0}/qemu/{1}/config'.format(entry['node'], vmid), description=text + '\n\n' + notes)
                self.human[vmid] = (name, human_part(self._config(entry).get('description')))

    # ------------------------------------------------------------ the invariants

    def check(self, succeeded):
        before, self.guests = self.guests, self._guests()
        configs = {int(entry['vmid']): (entry, self._config(entry)) for entries in self.guests.values() for entry in entries}
        self.templates |= {vmid for vmid, (entry, _config) in configs.items() if entry.get('template')}
        found = []
        found += self._unique_names()
        if succeeded:
            found += self._nothing_left_behind(configs)
        found += self._human_notes(configs)
        found += self._true_records(configs)
        found += self._untouched()
        found += self._templates_in_use(configs)
        found += self._replacements(before, configs)
        self._figures = {
            'guests': len(configs),
            'templates': sum(1 for entry, _c in configs.values() if entry.get('template')),
            'build_vms': sorted(
                entry['name'] for entry, _c in configs.values() if 'puls-building' in (entry.get('tags') or '') or entry['name'].endswith('-build')
            ),
        }
        self.write_human_notes()
        return found

    def figures(self):
        return dict(self._figures)

    def _unique_names(self):
        self.checks['unique names'] += 1
        return [
            'unique names: {0} guests are named {1!r} ({2})'.format(len(entries), name, ', '.join(str(entry['vmid']) for entry in entries))
            for name, entries in sorted(self.guests.items())
            if len(entries) > 1
        ]

    def _nothing_left_behind(self, configs):
        used_bases = self._linked_bases(configs)
        allowed = set(self.fleet.vms) | set(self.fleet.templates) | set(SEEDED)
        found = []
        for vmid, (entry, _config) in sorted(configs.items()):
            self.checks['nothing left behind'] += 1
            if entry['name'] in allowed or (entry.get('template') and vmid in used_bases):
                continue
            found.append(
                'nothing left behind: {0} ({1}{2}) is declared by no one after a successful round'.format(
                    entry['name'], vmid, ', tags ' + entry['tags'] if entry.get('tags') else ''
                )
            )
        return found

    def _human_notes(self, configs):
        found = []
        for vmid, (name, text) in sorted(self.human.items()):
            self.checks['human notes'] += 1
            if vmid not in configs or configs[vmid][0].get('name') != name:
                if name in self.fleet.vms:
                    found.append(f'human notes: VM {name} ({vmid}) is gone, with its Notes, though it is still declared')
                else:
                    # Replaced or pruned as declared; its VMID may serve a new VM from now on.
                    del self.human[vmid]
                continue
            now = human_part(configs[vmid][1].get('description'))
            if now != text:
                found.append(f'human notes: VM {name} ({vmid}) Notes changed from {text!r} to {now!r}')
        return found

    def _true_records(self, configs):
        found = []
        for vmid, (entry, config) in sorted(configs.items()):
            entries = _notes.parse(config.get('description')).entries
            if not entries:
                continue
            declared = self.fleet.vms.get(entry['name'], {}).get('pve_provision', [])
            for path, file_hash in entries.items():
                self.checks['true records'] += 1
                version = self.fleet.hash_versions.get(path, {}).get(file_hash)
                where = '{0} ({1}) records {2}={3}'.format(entry['name'], vmid, path, file_hash)
                if version is None:
                    found.append(f'true records: {where}, a hash no version of the file ever had')
                    continue
                inherited = not entry.get('template') and path not in declared
                homes = [vmid] + (sorted(self.templates) if inherited else [])
                runs = [self._last_run(home, path, version) for home in homes]
                if 'ended' not in runs:
                    how = 'whose last run there did not end' if 'failed' in runs else 'which never ran there'
                    found.append(f'true records: {where} (v{version}), {how}')
        return found

    def _last_run(self, vmid, path, version):
        """How the last run of that version of path went in the guest of vmid: 'ended', 'failed' or None."""
        log_file = self.lab.guest(vmid).home / fleet_module.PROVISION_LOG
        log = log_file.read_text(encoding='utf-8').splitlines() if log_file.exists() else []
        begun = [index for index, line in enumerate(log) if line == f'begin {path} {version}']
        if not begun:
            return None
        return 'ended' if f'end {path} {version}' in log[begun[-1] :] else 'failed'

    def _untouched(self):
        found = []
        for name, before in self.untouched.items():
            self.checks['untouched guests'] += 1
            entries = self.guests.get(name, [])
            if len(entries) != 1:
                found.append(f'untouched guests: {name} is gone')
            elif self._state(name) != before:
                found.append(f'untouched guests: {name} changed from {before} to {self._state(name)}')
        return found

    @staticmethod
    def _linked_bases(configs):
        return {int(base) for _entry, config in configs.values() for value in config.values() for base in LINKED_BASE.findall(str(value))}

    def _templates_in_use(self, configs):
        found = []
        for base in sorted(self._linked_bases(configs) | {fleet_module.BASE_TEMPLATE_VMID}):
            self.checks['templates in use'] += 1
            if base not in configs or not configs[base][0].get('template'):
                found.append(f'templates in use: template {base} is gone, but a clone uses it')
        return found

    def _replacements(self, before, configs):
        found = []
        for new, old in sorted(self.fleet.replacements.items()):
            if self.fleet.vms.get(new, {}).get('pve_replace') != old or old not in before or old in self.guests:
                continue
            self.checks['replacements'] += 1
            successors = self.guests.get(new, [])
            if len(successors) != 1 or successors[0].get('status') != 'running':
                found.append(f'replacements: {old} is gone, but its successor {new} does not run')
                continue
            files = self.fleet.declared(new).get('pve_provision', [])
            recorded = _notes.parse(configs[int(successors[0]['vmid'])][1].get('description')).entries
            if any(recorded.get(path) != file_hash for path, file_hash in self.fleet.current_hashes(files).items()):
                found.append(f'replacements: {old} is gone, but its successor {new} records {recorded}, not all of {files}')
        return found
