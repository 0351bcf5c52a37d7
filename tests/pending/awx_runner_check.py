# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile run as AWX runs it: ansible-runner on a private data directory shaped like the one AWX writes
for a job, against the lab. PENDING: it needs puls.proxmox.site and puls.proxmox.destroy (playbooks/, with the
reconcile role); see tests/pending/README.md for how to switch it on.

An AWX job is, on the execution node, ansible-runner with:
- env/envvars: the environment its credentials inject; here, docs/awx/credential-type.yml rendered with the lab's
  URL, token and CA as AWX renders it (the CA file lands in env/, as AWX writes it);
- env/extravars: the job's extra variables, with the awx_* variables AWX adds and the survey's answers;
- env/cmdline: `--check --diff` for a check job with "Show changes" on (the plan);
- inventory/hosts: a script printing AWX's copy of the inventory as JSON (variables as imported, untemplated);
- project/: the project checkout; here, the playbooks/site.yml and playbooks/destroy.yml that docs/awx.md shows;
and the collection in the execution environment: here, the tarball built from this checkout, installed into a
fresh path that is the only collections path.

Per-host outcomes come from the runner's job events, as AWX reads them. AWX keeps the events and the stdout;
the private data directory, with env/envvars and the runner's artifacts/<ident>/command (both hold the
injected token), is deleted when the job ends, so the secrets checks look at events and stdout only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import ansible_runner
import pytest
import yaml
from integration.test_tarball import build_tarball, install_tarball
from unit.test_awx_credential_type import awx_inject, load_credential_type

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient

REPO = Path(__file__).resolve().parents[2]
AWX_DOC = REPO / 'docs' / 'awx.md'
INVENTORY_NAME = 'Proxmox fleet'
CI_PASSWORD = 'ci-Pa55-never-shown'
TEMPLATE_VMID = '9017'  # the lab's ubuntu-24.04-cloud on pve1


def project_playbooks():
    """The project's playbooks as docs/awx.md shows them: {'playbooks/site.yml': text, ...}."""
    blocks = re.findall(r'```yaml\n# (playbooks/[\w.-]+\.yml)\n(.*?)```', AWX_DOC.read_text(), re.S)
    return dict((path, text) for path, text in blocks)


def lab_client(lab):
    return PveClient(lab.url, lab.user, lab.token_name, lab.token_secret, ca_path=str(lab.cafile))


def vms_named(lab, name):
    """The cluster's guests (VMs and templates) with this name."""
    return [vm for vm in lab_client(lab).get('/cluster/resources', type='vm') if vm.get('name') == name]


def awx_inventory(lab, hostvars, groups):
    """AWX's copy of an inventory, as its job inventory script prints it: groups with their hosts, and _meta."""
    data = {'all': {'children': sorted(groups) + ['ungrouped'],
                    'vars': {'pve_nodes': lab.nodes,
                             'pve_dns_domain': lab.env['PROXMOX_DNS_DOMAIN'],
                             'pve_dns_servers': lab.env['PROXMOX_DNS_SERVERS'].split(',')}},
            'ungrouped': {'hosts': []},
            '_meta': {'hostvars': hostvars}}
    for group, hosts in groups.items():
        data[group] = {'hosts': sorted(hosts)}
    return data


def slice_inventory(inventory, number, count):
    """Slice `number` (from 1) of `count`, as AWX cuts one for a sliced job: the hosts ordered by name, every
    count-th from the number-th on; groups keep their variables and lose the other slices' hosts."""
    names = sorted(inventory['_meta']['hostvars'])[number - 1::count]
    sliced = json.loads(json.dumps(inventory))
    sliced['_meta']['hostvars'] = dict((name, sliced['_meta']['hostvars'][name]) for name in names)
    for group, data in sliced.items():
        if group != '_meta' and 'hosts' in data:
            data['hosts'] = [host for host in data['hosts'] if host in names]
    return sliced


@dataclasses.dataclass
class AwxJob:
    status: str
    rc: int
    events: list
    stdout: str

    @property
    def stats(self):
        (stats,) = [event['event_data'] for event in self.events if event['event'] == 'playbook_on_stats']
        return stats

    def outcome(self, host):
        """The host's line of the play recap, as AWX shows it: failed, unreachable, changed or ok."""
        stats = self.stats
        if stats.get('failures', {}).get(host):
            return 'failed'
        if stats.get('dark', {}).get(host):
            return 'unreachable'
        if stats.get('changed', {}).get(host):
            return 'changed'
        return 'ok' if host in stats.get('ok', {}) else 'absent'

    def diffs(self, host):
        """The diffs of the host's task results (a result's diff is a dict or a list of them)."""
        found = []
        for event in self.events:
            if event['event'] == 'runner_on_ok' and event['event_data'].get('host') == host:
                diff = event['event_data'].get('res', {}).get('diff')
                found += [item for item in (diff if isinstance(diff, list) else [diff]) if item]
        return found

    def leaks(self, secrets):
        """Each secret with where it was seen: in an event (by counter) or on a stdout line (by number)."""
        seen = []
        for secret in secrets:
            seen += ['event %s (%s)' % (event.get('counter'), event['event'])
                     for event in self.events if secret in json.dumps(event)]
            seen += ['stdout line %d' % number for number, line in enumerate(self.stdout.splitlines(), 1) if secret in line]
        return seen


def credential_inputs(lab):
    """The fields of the AWX credential for the lab, as a user fills them in (docs/awx.md, step 3)."""
    return dict(api_url=lab.url, api_user=lab.user, api_token_name=lab.token_name, api_token_secret=lab.token_secret,
                ca_certificate=Path(lab.cafile).read_text())


def awx_job(root, lab, collections_path, inventory, playbook, *, check=False, extravars=None, ident='1'):
    """Run one AWX job with ansible-runner from a private data directory laid out as AWX lays it out."""
    (root / 'env').mkdir(parents=True)
    envvars, _stored = awx_inject(load_credential_type(), credential_inputs(lab), root)
    envvars.update(ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false',
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_HOME=str(root / '.ansible'),
                   ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
                   # ansible-playbook of the venv, as the execution environment has its own on PATH.
                   PATH='%s%s%s' % (Path(sys.executable).parent, os.pathsep, os.environ.get('PATH', '')))
    (root / 'env' / 'envvars').write_text(yaml.safe_dump(envvars))
    job_vars = dict(awx_job_id=int(ident), awx_inventory_name=INVENTORY_NAME, awx_job_template_name=playbook,
                    tower_job_id=int(ident), tower_inventory_name=INVENTORY_NAME)
    job_vars.update(extravars or {})
    (root / 'env' / 'extravars').write_text(yaml.safe_dump(job_vars))
    (root / 'env' / 'cmdline').write_text('--check --diff' if check else '--diff')
    (root / 'env' / 'settings').write_text(yaml.safe_dump({'suppress_ansible_output': True, 'job_timeout': 900}))
    (root / 'inventory').mkdir()
    script = root / 'inventory' / 'hosts'
    script.write_text('#!%s\nimport json\nprint(json.dumps(%r))\n' % (sys.executable, inventory))
    script.chmod(0o755)
    for path, text in project_playbooks().items():
        (root / 'project' / path).parent.mkdir(parents=True, exist_ok=True)
        (root / 'project' / path).write_text(text)
    runner = ansible_runner.run(private_data_dir=str(root), playbook=playbook, ident=ident, quiet=True)
    return AwxJob(runner.status, runner.rc, list(runner.events), runner.stdout.read())


@pytest.fixture(scope='module')
def collections_path(tmp_path_factory):
    """The execution environment's collections: the tarball built from this checkout, installed fresh."""
    workdir = tmp_path_factory.mktemp('awx-ee')
    tarball = build_tarball(workdir / 'dist', workdir / 'home')
    install_tarball(tarball, workdir / 'collections', workdir / 'home')
    return workdir / 'collections'


@pytest.fixture
def web1_inventory(lab):
    """One VM cloned from the lab's template, stopped (no SSH), with a cloud-init password to keep secret."""
    hostvars = {'web1': {'pve_image': TEMPLATE_VMID, 'pve_node': 'pve1', 'pve_cores': 1, 'pve_memory': 1024,
                         'pve_ip': '%s/24' % lab.address(1), 'pve_gateway': lab.gateway, 'pve_power': 'stopped',
                         'pve_ci_password': CI_PASSWORD}}
    return awx_inventory(lab, hostvars, {'pve_vms': ['web1'], 'pve_templates': []})


def test_check_job_shows_each_hosts_diff_and_changes_nothing(lab, tmp_path, collections_path, web1_inventory):
    writes = len(lab.writes())
    plan = awx_job(tmp_path / 'plan', lab, collections_path, web1_inventory, 'playbooks/site.yml', check=True)
    assert plan.status == 'successful', plan.stdout
    assert plan.outcome('web1') == 'changed'
    assert plan.diffs('web1'), 'the plan shows no diff for web1:\n%s' % plan.stdout
    assert len(lab.writes()) == writes, 'the check job wrote to PVE: %s' % lab.writes()[writes:]
    assert not vms_named(lab, 'web1')


def test_run_job_applies_the_plan_and_a_second_check_job_finds_nothing(lab, tmp_path, collections_path, web1_inventory):
    run = awx_job(tmp_path / 'site', lab, collections_path, web1_inventory, 'playbooks/site.yml', ident='2')
    assert run.status == 'successful', run.stdout
    assert run.outcome('web1') == 'changed'
    (web1,) = vms_named(lab, 'web1')
    assert web1['node'] == 'pve1' and web1['status'] == 'stopped'
    writes = len(lab.writes())
    again = awx_job(tmp_path / 'plan', lab, collections_path, web1_inventory, 'playbooks/site.yml', check=True, ident='3')
    assert again.status == 'successful', again.stdout
    assert again.outcome('web1') == 'ok', again.stdout
    assert len(lab.writes()) == writes


def test_check_job_after_a_declared_change_shows_it_and_leaves_the_vm_as_it_is(lab, tmp_path, collections_path, web1_inventory):
    assert awx_job(tmp_path / 'site', lab, collections_path, web1_inventory, 'playbooks/site.yml').status == 'successful'
    web1_inventory['_meta']['hostvars']['web1']['pve_memory'] = 2048
    writes = len(lab.writes())
    plan = awx_job(tmp_path / 'plan', lab, collections_path, web1_inventory, 'playbooks/site.yml', check=True, ident='2')
    assert plan.status == 'successful', plan.stdout
    assert plan.outcome('web1') == 'changed'
    assert '2048' in json.dumps(plan.diffs('web1'))
    assert len(lab.writes()) == writes
    (web1,) = vms_named(lab, 'web1')
    assert lab_client(lab).vm_config(web1['node'], web1['vmid'])['memory'] in (1024, '1024')


def test_token_secret_and_passwords_appear_in_no_job_event_and_no_stdout_line(lab, tmp_path, collections_path, web1_inventory):
    secrets = [lab.token_secret, lab.password, CI_PASSWORD]
    plan = awx_job(tmp_path / 'plan', lab, collections_path, web1_inventory, 'playbooks/site.yml', check=True)
    run = awx_job(tmp_path / 'site', lab, collections_path, web1_inventory, 'playbooks/site.yml', ident='2')
    assert plan.status == run.status == 'successful', plan.stdout + run.stdout
    assert not plan.leaks(secrets) and not run.leaks(secrets), plan.leaks(secrets) + run.leaks(secrets)


def test_destroy_job_stops_unless_the_survey_answer_is_the_inventory_name(lab, tmp_path, collections_path, web1_inventory):
    assert awx_job(tmp_path / 'site', lab, collections_path, web1_inventory, 'playbooks/site.yml').status == 'successful'
    writes = len(lab.writes())
    refused = awx_job(tmp_path / 'destroy-wrong', lab, collections_path, web1_inventory, 'playbooks/destroy.yml',
                      extravars={'pve_destroy_confirm': 'yes'}, ident='2')
    assert refused.status == 'failed'
    assert len(lab.writes()) == writes and vms_named(lab, 'web1')
    confirmed = awx_job(tmp_path / 'destroy', lab, collections_path, web1_inventory, 'playbooks/destroy.yml',
                        extravars={'pve_destroy_confirm': INVENTORY_NAME}, ident='3')
    assert confirmed.status == 'successful', confirmed.stdout
    assert not vms_named(lab, 'web1')


def test_two_slices_at_once_bake_the_template_once_and_clone_the_vm_from_it(lab, tmp_path, collections_path):
    key = tmp_path / 'id_ed25519'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(key)], check=True)
    hostvars = {
        'golden': {'pve_image': TEMPLATE_VMID, 'pve_node': 'pve1', 'pve_ip': '%s/24' % lab.address(2),
                   'pve_gateway': lab.gateway},
        'web1': {'pve_image': 'golden', 'pve_node': 'pve1', 'pve_ip': '%s/24' % lab.address(1),
                 'pve_gateway': lab.gateway, 'pve_power': 'stopped'},
    }
    inventory = awx_inventory(lab, hostvars, {'pve_templates': ['golden'], 'pve_vms': ['web1']})
    inventory['all']['vars'].update(pve_ssh_user='ubuntu', pve_ssh_keys=[key.with_suffix('.pub').read_text().strip()],
                                    pve_ssh_private_key_file=str(key))
    slices = [slice_inventory(inventory, number, 2) for number in (1, 2)]
    # AWX's ordering by name puts the template alone in slice 1 and the VM that needs it in slice 2.
    assert [sorted(one['_meta']['hostvars']) for one in slices] == [['golden'], ['web1']]
    jobs = [None, None]

    def run_slice(index):
        jobs[index] = awx_job(tmp_path / ('slice%d' % (index + 1)), lab, collections_path, slices[index],
                              'playbooks/site.yml', ident=str(index + 1))

    threads = [threading.Thread(target=run_slice, args=(index,)) for index in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=1200)
    assert [job.status for job in jobs] == ['successful', 'successful'], jobs[0].stdout + jobs[1].stdout
    (golden,) = vms_named(lab, 'golden')
    assert golden.get('template') in (1, True, '1')
    (web1,) = vms_named(lab, 'web1')
    assert web1['node'] == 'pve1'
