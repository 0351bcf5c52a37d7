# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan equals the run: ansible-playbook puls.proxmox.site --check on a fleet, then the real run, then both again,
against the lab. The check run writes nothing and its plan JSON (PULS_PLAN_JSON, the plan summary's) equals the real
run's machine by machine; the real run converges; the second run changes nothing and opens no SSH connection.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_plan_equals_run.py
"""

from __future__ import annotations

import json
import re
import sys
import textwrap

import lab_vms
from playbooks import REPO, run_playbook

from lab import images

SITE = '- import_playbook: puls.proxmox.site\n'


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def mark_playbook(tmp_path, name):
    write(tmp_path / name, f'''\
        - name: Mark the machine
          hosts: all
          gather_facts: false
          tasks:
            - name: Leave a mark
              ansible.builtin.shell: |
                mkdir -p "$HOME/etc/ssh"
                echo "{name} on {{{{ inventory_hostname }}}}" >> "$HOME/marks"
              changed_when: true
        ''')


def fleet(lab, tmp_path, templates, vms, **cluster):
    key, public = (tmp_path / 'id_ed25519', (tmp_path / 'id_ed25519.pub').read_text().strip()) \
        if (tmp_path / 'id_ed25519').exists() else lab_vms.ssh_key(tmp_path)
    common = dict(pve_ssh_user='alice', pve_ssh_keys=[public], pve_ssh_private_key_file=str(key),
                  pve_guest_python=sys.executable, pve_provision_dir=str(tmp_path), pve_nodes=lab.nodes,
                  pve_generalize_root='~alice', pve_template_wait_delay=1)
    common.update(cluster)
    return {'all': {'vars': common, 'children': {'pve_templates': {'hosts': templates}, 'pve_vms': {'hosts': vms}}}}


def site(lab, tmp_path, inventory, name, check=False):
    plan_json = tmp_path / f'{name}.plan.json'
    env = dict(lab.env, ANSIBLE_CALLBACKS_ENABLED='puls.proxmox.plan_summary', PULS_PLAN_JSON=str(plan_json))
    run = run_playbook(tmp_path, SITE, env, inventory=inventory, check=check, name=name)
    run.plan = json.loads(plan_json.read_text()) if plan_json.exists() else None
    return run


def why(*runs):
    """What went wrong in runs, short: each failed task's message, and the end of the output (with the plan summary)."""
    return '\n'.join('{0} {1}: {2}'.format(record['host'], record['task'], record['result'].get('msg'))
                     for run in runs for record in run.failed) + '\n' + '\n'.join(run.stdout[-1500:] for run in runs)


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
    inventory = fleet(lab, tmp_path, {'golden': dict(pve_image='ubuntu-24.04-cloud', pve_provision=['base.yml'])},
                      {'web1': dict(pve_image='golden', pve_ip=f'{lab.address(1)}/24', pve_gateway=lab.gateway,
                                    pve_provision=['app.yml'])})
    planned, _applied = plan_then_run(lab, tmp_path, inventory)
    assert machines(planned.plan) == {('template', 'golden'): ['build', 'provision base.yml'],
                                      ('vm', 'web1'): ['create', 'provision app.yml']}


def test_a_vm_and_a_template_imported_from_a_cloud_image_the_same_run_downloads_are_planned_as_they_are_run(lab, tmp_path):
    url, sums = lab.serve('noble.qcow2', images.qcow2(3584 << 20))
    volume = 'local:import/noble.qcow2'
    mark_playbook(tmp_path, 'base.yml')
    inventory = fleet(lab, tmp_path, {'noble-golden': dict(pve_image=volume, pve_storage='local-lvm', pve_provision=['base.yml'],
                                                         pve_ip=f'{lab.address(1)}/24', pve_gateway=lab.gateway)},
                      {'imp1': dict(pve_image=volume, pve_storage='local-lvm', pve_ip=f'{lab.address(2)}/24',
                                    pve_gateway=lab.gateway)},
                      pve_isos=[dict(filename='noble.qcow2', content='import', node='pve1', url=url,
                                     checksum='sha256:' + sums['sha256'])])
    planned, applied = plan_then_run(lab, tmp_path, inventory)
    assert machines(planned.plan) == {('iso', 'noble.qcow2'): ['create'], ('template', 'noble-golden'): ['build', 'provision base.yml'],
                                      ('vm', 'imp1'): ['create']}
    # The plan names the volume the VM is imported from, as the real run then does.
    created = planned.one('puls.proxmox.reconcile : Create the VM', 'imp1')
    assert created['diff'] == applied.one('puls.proxmox.reconcile : Create the VM', 'imp1')['diff']
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


def test_the_plan_examples_of_the_docs_are_what_the_documented_fleet_prints(lab, tmp_path):
    documented = documented_plans()
    assert set(documented) == {'minimal', 'changed'} and len(documented['minimal']) == 2, documented
    api = lab_vms.client(lab)
    for name in ('base.yml', 'web.yml', 'app.yml'):
        mark_playbook(tmp_path, name)
    # The fleet of docs/index.md's "A minimal inventory", at lab addresses.
    golden = dict(pve_image='9017', pve_provision=['base.yml', 'web.yml'])
    web1 = dict(pve_image='golden-web', pve_ip=f'{lab.address(1)}/24', pve_gateway=lab.gateway, pve_cores=2, pve_memory=4096)
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
    inventory = fleet(lab, tmp_path, {'golden-web': golden},
                      {'web1': dict(web1, pve_cores=4),
                       'web2': dict(pve_image='golden-web', pve_ip=f'{lab.address(2)}/24', pve_gateway=lab.gateway,
                                    pve_provision=['app.yml'], pve_replace='web-old')},
                      pve_isos=[dict(filename='lab-tools.iso', node='pve1', url=url, checksum='sha256:' + sums['sha256'])])
    planned, applied = plan_then_run(lab, tmp_path, inventory)
    for source, lines in documented['changed']:
        assert printed_plan(planned) == lines, source
    assert printed_plan(applied, 'Summary (real run)')[1:] == printed_plan(planned)[1:]
