# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan equals the run: ansible-playbook puls.proxmox.site --check on a fleet, then the real run, then both again,
against the lab. The check run writes nothing and its plan JSON (PULS_PLAN_JSON, the plan summary's) equals the real
run's machine by machine; the real run converges; the second run changes nothing and opens no SSH connection.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_plan_equals_run.py
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap

import fleetgen
import lab_vms
import pytest
from lab import images

from playbooks import REPO, run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def mark_playbook(tmp_path, name):
    write(
        tmp_path / name,
        f'''\
        - name: Mark the machine
          hosts: all
          gather_facts: false
          tasks:
            - name: Leave a mark
              ansible.builtin.shell: |
                mkdir -p "$HOME/etc/ssh"
                echo "{name} on {{{{ inventory_hostname }}}}" >> "$HOME/marks"
              changed_when: true
        ''',
    )


def fleet(lab, tmp_path, templates, vms, **cluster):
    key, public = (
        (tmp_path / 'id_ed25519', (tmp_path / 'id_ed25519.pub').read_text().strip()) if (tmp_path / 'id_ed25519').exists() else lab_vms.ssh_key(tmp_path)
    )
    common = {
        'pve_ssh_user': 'alice',
        'pve_ssh_keys': [public],
        'pve_ssh_private_key_file': str(key),
        'pve_guest_python': sys.executable,
        'pve_provision_dir': str(tmp_path),
        'pve_nodes': lab.nodes,
        'pve_generalize_root': '~alice',
        'pve_template_wait_delay': 1,
    }
    common.update(cluster)
    return {'all': {'vars': common, 'children': {'pve_templates': {'hosts': templates}, 'pve_vms': {'hosts': vms}}}}


def site(lab, tmp_path, inventory, name, check=False, **env):
    """puls.proxmox.site with the plan summary and its JSON (run.plan); inventory None runs the one written before;
    env adds environment variables (PULS_HISTORY_DIR...)."""
    plan_json = tmp_path / f'{name}.plan.json'
    env = dict(lab.env, ANSIBLE_CALLBACKS_ENABLED='puls.proxmox.plan_summary', PULS_PLAN_JSON=str(plan_json), **env)
    run = run_playbook(tmp_path, SITE, env, inventory=inventory, check=check, name=name)
    run.plan = json.loads(plan_json.read_text()) if plan_json.exists() else None
    return run


def why(*runs):
    """What went wrong in runs, short: each failed task's message, and the end of the output (with the plan summary)."""
    return (
        '\n'.join('{0} {1}: {2}'.format(record['host'], record['task'], record['result'].get('msg')) for run in runs for record in run.failed)
        + '\n'
        + '\n'.join(run.stdout[-1500:] for run in runs)
    )


def machines(plan):
    return {(m['kind'], m['name']): m['actions'] for m in plan['machines']}


def plan_then_run(lab, tmp_path, inventory):
    """Check, real, check again, real again: the plan is the run, and then nothing is left to do."""
    writes = len(lab.writes())
    planned = site(lab, tmp_path, inventory, 'plan', check=True)
    assert planned.rc == 0, why(planned) + planned.stderr
    assert lab.writes()[writes:] == [], why(planned)
    applied = site(lab, tmp_path, inventory, 'apply')
    assert applied.rc == 0, why(applied) + applied.stderr
    assert machines(planned.plan) == machines(applied.plan), why(planned, applied)
    assert planned.plan['totals'] == applied.plan['totals']
    connections, writes = lab.ssh_connections(), len(lab.writes())
    for name, check in (('plan-again', True), ('apply-again', False)):
        again = site(lab, tmp_path, inventory, name, check=check)
        assert again.rc == 0 and again.plan['nothing_to_do'], why(again) + again.stderr
        assert not again.changed, why(again)
    assert (lab.ssh_connections(), len(lab.writes())) == (connections, writes)
    return planned, applied


def test_a_vm_cloned_from_a_template_built_in_the_same_run_and_provisioned_is_planned_as_it_is_run(lab, tmp_path):
    mark_playbook(tmp_path, 'base.yml')
    mark_playbook(tmp_path, 'app.yml')
    inventory = fleet(
        lab,
        tmp_path,
        {'golden': {'pve_image': 'ubuntu-24.04-cloud', 'pve_provision': ['base.yml']}},
        {'web1': {'pve_image': 'golden', 'pve_ip': f'{lab.address(1)}/24', 'pve_gateway': lab.gateway, 'pve_provision': ['app.yml']}},
    )
    planned, _applied = plan_then_run(lab, tmp_path, inventory)
    assert machines(planned.plan) == {('template', 'golden'): ['build', 'provision base.yml'], ('vm', 'web1'): ['create', 'provision app.yml']}


def test_a_vm_and_a_template_imported_from_a_cloud_image_the_same_run_downloads_are_planned_as_they_are_run(lab, tmp_path):
    url, sums = lab.serve('noble.qcow2', images.qcow2(3584 << 20))
    volume = 'local:import/noble.qcow2'
    mark_playbook(tmp_path, 'base.yml')
    golden = {'pve_image': volume, 'pve_storage': 'local-lvm', 'pve_provision': ['base.yml'], 'pve_ip': f'{lab.address(1)}/24', 'pve_gateway': lab.gateway}
    inventory = fleet(
        lab,
        tmp_path,
        {'noble-golden': golden},
        {'imp1': {'pve_image': volume, 'pve_storage': 'local-lvm', 'pve_ip': f'{lab.address(2)}/24', 'pve_gateway': lab.gateway}},
        pve_isos=[{'filename': 'noble.qcow2', 'content': 'import', 'node': 'pve1', 'url': url, 'checksum': 'sha256:' + sums['sha256']}],
    )
    planned, applied = plan_then_run(lab, tmp_path, inventory)
    assert machines(planned.plan) == {
        ('iso', 'noble.qcow2'): ['create'],
        ('template', 'noble-golden'): ['build', 'provision base.yml'],
        ('vm', 'imp1'): ['create'],
    }
    # The plan names the volume the VM is imported from, as the real run then does.
    created = planned.one('puls.proxmox.reconcile : Create or converge the VM', 'imp1')
    assert created['diff'] == applied.one('puls.proxmox.reconcile : Create or converge the VM', 'imp1')['diff']
    assert volume in str(created['diff']['after']), created['diff']


def documented_plans():
    """Name -> the lines of each plan example in README.md and docs/index.md (a `<!-- plan-example: NAME -->` comment,
    then a fenced block), with the file each came from."""
    found = {}
    for path in (REPO / 'README.md', REPO / 'docs' / 'index.md'):
        for name, block in re.findall(r'<!-- plan-example: ([\w-]+) -->\n```\w*\n(.*?)```', path.read_text(), flags=re.S):
            found.setdefault(name, []).append((path.name, block.splitlines()))
    return found


def printed_plan(run, header='Plan (check mode: nothing was changed)'):
    """The plan summary as the callback printed it: its banner, one line per machine, the total."""
    lines = run.stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(header + ' *'))
    end = lines.index('', start)
    return lines[start:end]


@pytest.mark.slow(minutes=4)
def test_the_plan_examples_of_the_docs_are_what_the_documented_fleet_prints(lab, tmp_path):
    documented = documented_plans()
    assert set(documented) == {'minimal', 'changed'} and len(documented['minimal']) == 2, documented
    api = lab_vms.client(lab)
    for name in ('base.yml', 'web.yml', 'app.yml'):
        mark_playbook(tmp_path, name)
    # The fleet of docs/index.md's "A minimal inventory", at lab addresses.
    golden = {'pve_image': '9017', 'pve_provision': ['base.yml', 'web.yml']}
    web1 = {'pve_image': 'golden-web', 'pve_ip': f'{lab.address(1)}/24', 'pve_gateway': lab.gateway, 'pve_cores': 2, 'pve_memory': 4096}
    inventory = fleet(lab, tmp_path, {'golden-web': golden}, {'web1': web1})
    first = site(lab, tmp_path, inventory, 'minimal-plan', check=True)
    assert first.rc == 0, why(first)
    for source, lines in documented['minimal']:
        assert printed_plan(first) == lines, source
    applied = site(lab, tmp_path, inventory, 'minimal-apply')
    assert applied.rc == 0 and machines(applied.plan) == machines(first.plan), why(applied)

    # Later: web.yml changed, web1 given more cores while it runs, web2 to replace web-old, an ISO declared.
    lab_vms.clone(api, 150, 'web-old', tags='puls-managed')
    write(tmp_path / 'web.yml', (tmp_path / 'web.yml').read_text().replace('Leave a mark', 'Leave the new mark'))
    url, sums = lab.serve('lab-tools.iso', images.iso('TOOLS', {'tools.txt': b'tools\n'}))
    inventory = fleet(
        lab,
        tmp_path,
        {'golden-web': golden},
        {
            'web1': dict(web1, pve_cores=4),
            'web2': {
                'pve_image': 'golden-web',
                'pve_ip': f'{lab.address(2)}/24',
                'pve_gateway': lab.gateway,
                'pve_provision': ['app.yml'],
                'pve_replace': 'web-old',
            },
        },
        pve_isos=[{'filename': 'lab-tools.iso', 'node': 'pve1', 'url': url, 'checksum': 'sha256:' + sums['sha256']}],
    )
    planned, applied = plan_then_run(lab, tmp_path, inventory)
    for source, lines in documented['changed']:
        assert printed_plan(planned) == lines, source
    assert printed_plan(applied, 'Summary (real run)')[1:] == printed_plan(planned)[1:]


# ------------------------------------------------------------------------------------------- generated fleets
# The fixed seeds `make test` runs (they cover every dimension of fleetgen.DIMENSIONS, which a test checks); `make
# plan-fuzz SEEDS="1 2 3"` runs others (PULS_PLAN_SEEDS). Cases share a lab, PACK at a time: those without prune, and
# apart from them those with prune (which prunes only the owned guests no case of its pack declares).
FIXED_SEEDS = tuple(range(1, 33))
PACK = 10


def seeds():
    chosen = os.environ.get('PULS_PLAN_SEEDS')
    return tuple(int(seed) for seed in chosen.replace(',', ' ').split()) if chosen else FIXED_SEEDS


def packs(chosen):
    cases = [fleetgen.generate(seed) for seed in chosen]
    groups = [[case for case in cases if case.prune is prune] for prune in (False, True)]
    return [group[index : index + PACK] for group in groups for index in range(0, len(group), PACK)]


def test_the_fixed_seeds_cover_every_dimension_of_the_generator():
    cases = [fleetgen.generate(seed) for seed in FIXED_SEEDS]
    assert len(cases) >= 30
    assert fleetgen.missing(cases) == []


class Pack:
    """Several generated cases in one lab: what the cluster holds first, the setup run, the inventory of the run."""

    def __init__(self, lab, tmp_path, cases):
        self.lab, self.tmp_path, self.cases = lab, tmp_path, cases
        self.api = lab_vms.client(lab)
        self.addresses = iter(range(1, 90))
        self.vmids = iter(range(900, 950))
        self.prune = any(case.prune for case in cases)
        self.urls = {}

    def replay(self):
        return 'replay with: make plan-fuzz SEEDS="{0}"\n{1}'.format(
            ' '.join(str(case.seed) for case in self.cases), '\n'.join(case.describe() for case in self.cases)
        )

    def prepare(self):
        """Before any run: import volumes, served cloud images, a guest made by hand."""
        volumes = [case.volume_file for case in self.cases]

        def store():
            for name in volumes:
                self.lab.pve.store_file('local', name, 4 << 20, content='import')
                self.lab.pve.volume_data['local:import/' + name] = images.qcow2(3584 << 20)

        self.lab.call(store)
        for case in self.cases:
            self.urls[case.seed] = self.lab.serve(case.image_file, images.qcow2(3584 << 20))
        # A guest never to be touched: one made by hand.
        lab_vms.clone(self.api, next(self.vmids), 'p-foreign', description='made by hand')
        mark_playbook(self.tmp_path, 'mark.yml')
        for case in self.cases:
            mark_playbook(self.tmp_path, f'{case.prefix}-base.yml')

    def iso(self, case):
        url, sums = self.urls[case.seed]
        return {'filename': case.image_file, 'content': 'import', 'node': 'pve1', 'url': url, 'checksum': 'sha256:' + sums['sha256']}

    def template(self, case):
        declared = {'pve_provision': [f'{case.prefix}-base.yml']}
        if case.template_from_image:
            # An imported build VM has no guest agent to report a DHCP address.
            declared.update(
                pve_image='local:import/' + case.image_file,
                pve_storage='local-lvm',
                pve_ip=f'{self.lab.address(next(self.addresses))}/24',
                pve_gateway=self.lab.gateway,
            )
        else:
            declared.update(pve_image=fleetgen.BASE_TEMPLATE)
        return declared

    def vm(self, case, vm):
        image = {
            'existing-template': fleetgen.BASE_TEMPLATE,
            'declared-template': case.template_name,
            'downloaded-image': 'local:import/' + case.image_file,
            'import-volume': 'local:import/' + case.volume_file,
        }
        declared = {'pve_image': image[vm.source], 'pve_cores': vm.cores}
        if vm.source in ('downloaded-image', 'import-volume'):
            declared['pve_storage'] = 'local-lvm'
        if vm.address == 'static':
            declared.update(pve_ip=f'{self.lab.address(next(self.addresses))}/24', pve_gateway=self.lab.gateway)
        elif vm.address == 'dns':
            self.lab.dns.set(vm.name, self.lab.address(next(self.addresses)))
        else:
            declared['pve_ip'] = 'dhcp'
        if vm.user_data:
            # user_data brings its own network settings: neither pve_ip nor a DNS name of ours.
            declared.pop('pve_ip', None)
            declared.pop('pve_gateway', None)
            self.lab.dns.remove(vm.name)
            declared['pve_user_data'] = fleetgen.USER_DATA.format(name=vm.name)
        if vm.provision:
            declared['pve_provision'] = vm.provision
        if vm.replace:
            declared['pve_replace'] = vm.replace
        if vm.absent:
            declared['pve_state'] = 'absent'
        if vm.protected:
            declared['pve_protected'] = True
        return declared

    def inventories(self):
        """(setup inventory or None, the inventory of the run)."""
        templates, vms, isos = {}, {}, []
        # Guests the collection made and nothing declares later: a protected one (kept, also by prune) and, for a
        # prune case, one that prune takes.
        stopped = {'pve_image': fleetgen.BASE_TEMPLATE, 'pve_power': 'stopped', 'pve_ip': 'dhcp'}
        setup_templates, setup_vms, setup_isos = {}, {'p-kept': dict(stopped, pve_protected=True)}, []
        if self.prune:
            setup_vms['p-stray'] = dict(stopped)
        for case in self.cases:
            uses_image = case.template_from_image or any(vm.source == 'downloaded-image' for vm in case.vms)
            isos += [self.iso(case)] if uses_image else []
            if case.template != 'none':
                templates[case.template_name] = self.template(case)
            declared = {vm.name: self.vm(case, vm) for vm in case.vms}
            vms.update(declared)
            built = case.template in ('current', 'stale')
            if built:
                setup_templates[case.template_name] = templates[case.template_name]
            # The old VMs to replace exist, made by the collection; so does a VM to destroy, unless the cluster is empty.
            setup_vms.update({vm.replace: dict(stopped) for vm in case.vms if vm.replace})
            setup_vms.update({vm.name: dict(stopped) for vm in case.vms if vm.absent and case.start != 'empty'})
            if built and case.template_from_image:
                setup_isos.append(self.iso(case))
            if case.start == 'empty':
                continue
            present = [vm for vm in case.vms if not vm.absent and not vm.replace and not (vm.source == 'declared-template' and not built)]
            for vm in present[:1] if case.start == 'partly-converged' else present:
                setup_vms[vm.name] = declared[vm.name]
            if not (built and case.template_from_image) and any(vm.name in setup_vms and vm.source == 'downloaded-image' for vm in case.vms):
                setup_isos.append(self.iso(case))
        common = {'pve_prune': True} if self.prune else {}
        setup = fleet(self.lab, self.tmp_path, setup_templates, setup_vms, pve_isos=setup_isos)
        return setup, fleet(self.lab, self.tmp_path, templates, vms, pve_isos=isos, **common)

    def disturb(self):
        """After the setup run: stale templates' files change, drifted cases' first VM is stopped behind our back."""
        for case in self.cases:
            if case.template == 'stale':
                path = self.tmp_path / f'{case.prefix}-base.yml'
                path.write_text(path.read_text().replace('Leave a mark', 'Leave a newer mark'))
            if case.start == 'drifted':
                found = {entry['name']: entry for entry in self.api.cluster_vms()}
                for vm in case.vms:
                    entry = found.get(vm.name)
                    if entry and entry.get('status') == 'running':
                        self.api.run_task('POST', f"/nodes/{entry['node']}/qemu/{entry['vmid']}/status/stop")
                        break


@pytest.mark.slow(minutes=6)
@pytest.mark.parametrize('cases', packs(seeds()), ids=lambda cases: 'seeds-' + '-'.join(str(case.seed) for case in cases))
def test_a_generated_fleet_is_planned_as_it_is_run_and_then_left_alone(lab, tmp_path, cases):
    pack = Pack(lab, tmp_path, cases)
    pack.prepare()
    setup, inventory = pack.inventories()
    first = site(lab, tmp_path, setup, 'setup')
    assert first.rc == 0, 'the setup run failed; ' + pack.replay() + '\n' + why(first)
    pack.disturb()
    try:
        planned, applied = plan_then_run(lab, tmp_path, inventory)
    except AssertionError as failure:
        raise AssertionError(pack.replay() + '\n' + str(failure)) from None
    names = {entry['name'] for entry in lab_vms.client(lab).cluster_vms()}
    for case in cases:
        for vm in case.vms:
            assert (vm.name in names) is not vm.absent, pack.replay()
            assert not vm.replace or vm.replace not in names, pack.replay()
    assert {'p-foreign', 'p-kept'} <= names and 'p-stray' not in names, pack.replay()
