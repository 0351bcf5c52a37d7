# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared templates among the other machines of puls.proxmox.site, against the lab: a VM whose template another
run is building waits for it and clones the new one, a retired template is pruned once its last linked clone goes,
and templates built from each other in a cycle or from an image that matches nothing or several templates are
refused before any write.

Another run's build is played by the lab (a VM NAME-build tagged puls-building, as the bake makes it) and ended by
the test with pve_template's conversion, the bake's last step.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_template_fleet.py -n 2
"""

from __future__ import annotations

import threading
from urllib.parse import parse_qsl

import lab_vms
from polling import wait_until

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'
NODE = 'pve1'
LOCALHOST = {'all': {'hosts': {'localhost': {'ansible_connection': 'local'}}}}


def fleet(lab, templates, vms, **cluster):
    """An inventory of templates and VMs (name -> variables); nothing is provisioned, so no SSH is declared."""
    common = dict(pve_nodes=lab.nodes, pve_template_wait_delay=1, **cluster)
    return {'all': {'vars': common, 'children': {'pve_templates': {'hosts': templates}, 'pve_vms': {'hosts': vms}}}}


def site(lab, tmp_path, inventory, name, check=False, limit=None):
    return run_playbook(tmp_path, SITE, lab.env, inventory=inventory, check=check, name=name, extra_args=('--limit', limit) if limit else ())


def template(api, vmid, name, tags='puls-managed'):
    """A template made through the API, with the template block and (tagged) owner record pve_template's conversion
    records."""
    api.wait_task(api.create_vm(f'/nodes/{NODE}/qemu/{lab_vms.TEMPLATE}/clone', vmid, name=name, full=1), 60)
    block = '[puls-template: spec=%012x]' % vmid
    owned = lab_vms.owned(vmid, notes=block) if tags else {'description': block}
    api.put(f'/nodes/{NODE}/qemu/{vmid}/config', **dict(owned, tags=tags))
    api.run_task('POST', f'/nodes/{NODE}/qemu/{vmid}/template')


def guests(api):
    """name -> VMID of every guest."""
    return {entry['name']: int(entry['vmid']) for entry in api.cluster_vms()}


def forms(lab, method, suffix):
    return [(request.path, dict(parse_qsl(request.body))) for request in lab.requests() if request.method == method and request.path.endswith(suffix)]


def resource_reads(lab):
    return len([request for request in lab.requests() if request.method == 'GET' and '/cluster/resources' in request.path])


def pruned(run):
    """The names of the guests prune destroyed (or plans to, in check mode), in order."""
    return [
        record['result']['ansible_facts']['puls_plan']['name']
        for record in run.results
        if record['task'].endswith('Record the plan') and record['status'] == 'ok' and record['result']['ansible_facts']['puls_plan']['actions'] == ['prune']
    ]


def test_a_vm_waits_for_the_template_another_run_builds_clones_the_new_one_and_prune_takes_the_old_one_after_its_clone(lab, tmp_path):
    api = lab_vms.client(lab)
    template(api, 200, 'web-golden')
    api.wait_task(api.create_vm(f'/nodes/{NODE}/qemu/200/clone', 210, name='legacy1', full=0), 60)
    # Owned: the owner record of its own VMID beside the template block it inherited with the Notes.
    api.put(f'/nodes/{NODE}/qemu/210/config', **lab_vms.owned(210, notes=api.vm_config(NODE, 210)['description']))
    # Another run's build of web-golden, provisioned and about to be converted.
    lab_vms.clone(api, 120, 'web-golden-build', tags='puls-building;puls-managed')
    declared_vm = {'pve_image': 'web-golden', 'pve_linked_clone': True, 'pve_power': 'stopped'}
    inventory = fleet(lab, {'web-golden': {'pve_image': 'ubuntu-24.04-cloud'}}, {'app1': declared_vm, 'legacy1': declared_vm}, pve_prune=True)

    clones, reads = len(forms(lab, 'POST', '/clone')), resource_reads(lab)
    waiting = {}
    runner = threading.Thread(target=lambda: waiting.update(run=site(lab, tmp_path, inventory, 'app1', limit='app1')))
    runner.start()
    # It has found the build in progress twice: it waits, and has cloned nothing.
    assert wait_until(lambda: resource_reads(lab) >= reads + 3 or not runner.is_alive())
    assert runner.is_alive() and len(forms(lab, 'POST', '/clone')) == clones, waiting
    other_run = tmp_path / 'other-run'
    other_run.mkdir()
    conversion = {
        'name': 'Convert',
        'puls.proxmox.pve_template': {'name': 'web-golden', 'vmid': 120, 'state': 'converted', 'spec': {'image': 'ubuntu-24.04-cloud'}},
    }
    converted = run_playbook(
        other_run,
        [{'name': 'End the other run', 'hosts': 'localhost', 'gather_facts': False, 'tasks': [conversion]}],
        lab.env,
        inventory=LOCALHOST,
        name='convert',
    )
    runner.join(300)
    run = waiting['run']
    assert run.rc == 0 and converted.rc == 0, run.stdout + converted.stdout
    assert converted.one('Convert')['previous']['action'] == 'retired'

    # The VM was cloned from the new template (120), linked to its base, once that held the name.
    app1 = guests(api)['app1']
    assert [path for path, form in forms(lab, 'POST', '/clone') if form['newid'] == str(app1)] == [f'/api2/json/nodes/{NODE}/qemu/120/clone']
    volume = api.vm_config(NODE, app1)['scsi0'].split(',')[0]
    assert lab.call(lambda: lab.pve.linked_base(volume)) == '120/base-120-disk-0'
    query = [record for record in run.results if 'Ask whether the template is current' in record['task']]
    # It found the build and waited for it, asking again every second (pve_template_wait_delay), in one task.
    assert len(query) == 1 and query[0]['result']['waited'] >= 1 and query[0]['result']['vmid'] == 120
    # The build lost its mark only in the write that gave it the name: never was it done without being web-golden.
    marks = [form for _path, form in forms(lab, 'POST', '/qemu/120/config') if 'tags' in form and 'puls-building' not in form['tags']]
    assert [form.get('name') for form in marks] == ['web-golden']

    # Prune keeps the retired template while its linked clone is declared; it goes with the clone once that is not.
    retired = next(name for name in guests(api) if name.startswith('web-golden-'))
    assert pruned(run) == [] and retired in guests(api)
    del inventory['all']['children']['pve_vms']['hosts']['legacy1']
    planned = site(lab, tmp_path, inventory, 'prune-plan', check=True, limit='app1')
    done = site(lab, tmp_path, inventory, 'prune', limit='app1')
    assert planned.rc == 0 and done.rc == 0, planned.stdout + done.stdout
    assert pruned(planned) == pruned(done) == ['legacy1', retired]
    assert set(guests(api)) == {'ubuntu-24.04-cloud', 'web-golden', 'app1'}


def test_templates_in_a_cycle_and_images_matching_nothing_or_several_templates_are_refused_before_any_write(lab, tmp_path):
    api = lab_vms.client(lab)
    template(api, 9020, 'debian-13-a', tags='')
    template(api, 9021, 'debian-13-b', tags='')
    setup = len(lab.writes())
    templates = {
        'a-golden': {'pve_image': 'b-golden'},
        'b-golden': {'pve_image': 'a-golden'},
        'c-golden': {'pve_image': 'd-golden'},
        'd-golden': {'pve_image': 'e-golden'},
        'e-golden': {'pve_image': 'c-golden'},
        'self-golden': {'pve_image': 'self-golden'},
        'f-golden': {'pve_image': 'debian-13'},
        'g-golden': {'pve_image': 'fedora'},
        'h-golden': {'pve_image': 'ubuntu-24.04-cloud'},
    }
    vms = {'web1': {'pve_image': 'debian'}, 'web2': {'pve_image': 'h-golden'}}

    run = site(lab, tmp_path, fleet(lab, templates, vms), 'refused')

    assert run.rc != 0
    message = run.one('puls.proxmox.reconcile : Check the declared machines against each other and the cluster', 'a-golden')['msg']
    assert message.startswith('Nothing was changed: ')
    for problem in (
        'a-golden and b-golden are built from each other in a cycle (pve_image: a-golden -> b-golden -> a-golden)',
        'c-golden and d-golden and e-golden are built from each other in a cycle (pve_image: c-golden -> d-golden -> e-golden -> c-golden)',
        'self-golden: pve_image is self-golden, the template itself',
        "f-golden: pve_image 'debian-13' is ambiguous: 2 templates whose names contain it: template debian-13-a (9020 on pve1), "
        'template debian-13-b (9021 on pve1); give a longer part of the name or the VMID',
        'g-golden: pve_image is fedora, which is neither a template declared in this inventory',
        "web1: pve_image 'debian' is ambiguous",
    ):
        assert problem in message, message
    assert 'h-golden' not in message and 'web2' not in message
    assert lab.writes()[setup:] == []
