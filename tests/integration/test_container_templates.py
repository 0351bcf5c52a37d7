# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container templates baked by puls.proxmox.site against the lab: a host of pve_templates that declares pve_container
is built from the OS template pve_isos downloads, provisioned over SSH, generalized, converted by pve_template
(guest_type lxc), and a container of pve_containers is cloned from it as a linked clone, beside one made from the OS
template; each real run is planned first by a check run (plan_then_run). A changed provision file rebuilds the
template and only it; the previous one stays, retired, for its linked clone. Last, a container declared with
pve_replace replaces an existing one, which goes only after its successor converged and was provisioned.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_container_templates.py -p no:xdist
"""

from __future__ import annotations

import pytest
from lab.images import CONTAINER_TEMPLATE
from test_plan_equals_run import machines, mark_playbook, plan_then_run, site, why
from test_reconcile_containers import fleet

from ansible_collections.puls.proxmox.plugins.module_utils import _template_plan

VOLUME = f'local:vztmpl/{CONTAINER_TEMPLATE}'


def containers(lab):
    """host name -> (vmid, template, status, config) of every container of the lab."""
    return lab.call(lambda: {ct.config.get('hostname'): (ct.vmid, ct.template, ct.status, dict(ct.config)) for ct in lab.pve.cts})


def guests(plan):
    """The plan's machines but the downloads (pve_isos)."""
    return {key: actions for key, actions in machines(plan).items() if key[0] != 'iso'}


@pytest.mark.slow(minutes=4)
def test_a_container_template_is_baked_cloned_and_rebuilt_only_when_its_provision_file_changes(lab, tmp_path):
    mark_playbook(tmp_path, 'base.yml')
    mark_playbook(tmp_path, 'app.yml')
    golden = {
        'pve_container': {'image': VOLUME, 'storage': 'local-lvm', 'node': 'pve1', 'ip': f'{lab.address(41)}/24', 'gateway': lab.gateway, 'memory': 256},
        'pve_provision': ['base.yml'],
    }
    app = {'pve_container': {'image': 'ct-golden', 'linked_clone': True, 'ip': f'{lab.address(42)}/24', 'gateway': lab.gateway}, 'pve_provision': ['app.yml']}
    # web1, made from the OS template, takes another path than app1's (its module, where app1 is planned unasked in
    # check mode): each must still run its own steps in their order, provisioning last.
    web = {
        'pve_container': {'image': VOLUME, 'storage': 'local-lvm', 'node': 'pve1', 'ip': f'{lab.address(43)}/24', 'gateway': lab.gateway},
        'pve_provision': ['app.yml'],
    }
    declared = fleet(lab, tmp_path, {'ct-golden': golden}, {'app1': app, 'web1': web})

    planned, _applied = plan_then_run(lab, tmp_path, declared)
    assert guests(planned.plan) == {
        ('template', 'ct-golden'): ['build', 'provision base.yml'],
        ('container', 'app1'): ['create', 'provision app.yml'],
        ('container', 'web1'): ['create', 'provision app.yml'],
    }, why(planned)
    made = containers(lab)
    assert set(made) == {'ct-golden', 'app1', 'web1'}, made
    golden_vmid, is_template, _status, config = made['ct-golden']
    assert is_template and config['tags'] == 'puls-managed', config
    recorded = _template_plan.recorded_entries(config['description'])
    assert _template_plan.SPEC_KEY in recorded and '[puls-provision: base.yml=' in config['description']
    # Generalized: the build container's machine id was emptied before the conversion (lab/confine.py keeps it in HOME/.system).
    assert (lab.guest(golden_vmid).home / '.system' / 'etc' / 'machine-id').read_text() == ''
    app_vmid, is_template, status, app_config = made['app1']
    assert not is_template and status == 'running' and f'ip={lab.address(42)}/24' in app_config['net0']
    assert (lab.guest(app_vmid).home / 'marks').read_text().splitlines() == ['app.yml on app1']
    assert (lab.guest(made['web1'][0]).home / 'marks').read_text().splitlines() == ['app.yml on web1']

    # The template's provision file changes: the template alone is rebuilt, the clone stays as it is.
    (tmp_path / 'base.yml').write_text((tmp_path / 'base.yml').read_text() + '\n# changed\n')
    planned, _applied = plan_then_run(lab, tmp_path, declared)
    assert guests(planned.plan) == {
        ('template', 'ct-golden'): ['rebuild (provision file base.yml changed)', 'provision base.yml'],
        ('container', 'app1'): ['ok'],
        ('container', 'web1'): ['ok'],
    }, why(planned)
    rebuilt = containers(lab)
    assert rebuilt['app1'][0] == app_vmid and rebuilt['ct-golden'][0] != golden_vmid and rebuilt['ct-golden'][1]
    # app1 is a linked clone of the previous template (on LVM-thin, judged by the Notes it inherited): that one stays,
    # retired under another name.
    retired = [name for name, (vmid, *_rest) in rebuilt.items() if vmid == golden_vmid]
    assert len(retired) == 1 and _template_plan.is_retired_version(retired[0], rebuilt[retired[0]][3].get('tags'), 'ct-golden'), rebuilt


@pytest.mark.slow(minutes=3)
def test_a_container_declared_to_replace_another_replaces_it_once_converged_and_provisioned(lab, tmp_path):
    mark_playbook(tmp_path, 'app.yml')
    old = {'pve_container': {'image': VOLUME, 'storage': 'local-lvm', 'node': 'pve1', 'ip': f'{lab.address(43)}/24', 'gateway': lab.gateway}}
    declared = fleet(lab, tmp_path, {}, {'cache-old': old})
    assert site(lab, tmp_path, declared, 'old').rc == 0
    assert set(containers(lab)) == {'cache-old'}

    new = {
        'pve_container': {'image': VOLUME, 'storage': 'local-lvm', 'node': 'pve1', 'ip': f'{lab.address(44)}/24', 'gateway': lab.gateway},
        'pve_provision': ['app.yml'],
        'pve_replace': 'cache-old',
    }
    declared = fleet(lab, tmp_path, {}, {'cache-new': new})
    planned, applied = plan_then_run(lab, tmp_path, declared)
    assert guests(planned.plan) == {
        ('container', 'cache-new'): ['create', 'provision app.yml', 'replace cache-old'],
    }, why(planned)
    made = containers(lab)
    assert set(made) == {'cache-new'}
    assert (lab.guest(made['cache-new'][0]).home / 'marks').read_text().splitlines() == ['app.yml on cache-new']
    # The old one went after the new one was created and provisioned (the provision playbook's run, and its marks above).
    tasks = [record['task'].removeprefix('puls.proxmox.reconcile : ') for record in applied.results if record['host'] == 'cache-new']
    assert 'Destroy the container this one replaces' in tasks, tasks
    assert tasks.index('Destroy the container this one replaces') > tasks.index('Run ansible-playbook against the machine'), tasks
