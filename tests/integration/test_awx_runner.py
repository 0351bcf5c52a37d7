# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile run as AWX runs it: ansible-runner on a private data directory shaped like the one AWX writes
for a job, against the lab.

An AWX job is, on the execution node, ansible-runner with:
- env/envvars: the environment its credentials inject; here, docs/awx/credential-type.yml rendered with the lab's
  URL, token and CA as AWX renders it (the CA file lands in env/, as AWX writes it);
- env/extravars: the job's extra variables, with the awx_* variables AWX adds and the survey's answers;
- env/cmdline: `--check --diff` for a check job with "Show changes" on (the plan);
- inventory/hosts: a script printing AWX's copy of the inventory as JSON (variables as imported, untemplated);
- project/: the project checkout; here, the playbooks/site.yml, playbooks/destroy.yml and ansible.cfg that docs/awx.md
  shows;
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
import sys
import threading
from pathlib import Path

import ansible_runner
import lab_vms
import pytest
import yaml
from integration.test_tarball import build_tarball, install_tarball
from polling import wait_until
from unit.test_awx_credential_type import awx_inject, load_credential_type

REPO = Path(__file__).resolve().parents[2]
AWX_DOC = REPO / 'docs' / 'awx.md'
INVENTORY_NAME = 'Proxmox fleet'
CI_PASSWORD = 'ci-Pa55-never-shown'
TEMPLATE_VMID = str(lab_vms.TEMPLATE)  # the lab's ubuntu-24.04-cloud on pve1


def project_files_of_the_guide():
    """The project's files as docs/awx.md, step 2, shows them: {'playbooks/site.yml': text, 'ansible.cfg': text, ...}."""
    blocks = re.findall(r'```(?:yaml|ini)\n# ((?:playbooks/)?[\w.-]+\.(?:yml|cfg))\n(.*?)```', AWX_DOC.read_text(), re.S)
    assert sorted(path for path, _text in blocks) == ['ansible.cfg', 'playbooks/destroy.yml', 'playbooks/site.yml']
    return dict(blocks)


def vms_named(lab, name):
    """The cluster's guests (VMs and templates) with this name."""
    return [vm for vm in lab_vms.client(lab).get('/cluster/resources', type='vm') if vm.get('name') == name]


def awx_inventory(lab, hostvars, groups):
    """AWX's copy of an inventory, as its job inventory script prints it: groups with their hosts, and _meta."""
    data = {
        'all': {
            'children': sorted(groups) + ['ungrouped'],
            'vars': {'pve_nodes': lab.nodes, 'pve_dns_domain': lab.env['PROXMOX_DNS_DOMAIN'], 'pve_dns_servers': lab.env['PROXMOX_DNS_SERVERS'].split(',')},
        },
        'ungrouped': {'hosts': []},
        '_meta': {'hostvars': hostvars},
    }
    for group, hosts in groups.items():
        data[group] = {'hosts': sorted(hosts)}
    return data


def slice_inventory(inventory, number, count):
    """Slice `number` (from 1) of `count`, as AWX cuts one for a sliced job: the hosts ordered by name, every
    count-th from the number-th on; groups keep their variables and lose the other slices' hosts."""
    names = sorted(inventory['_meta']['hostvars'])[number - 1 :: count]
    sliced = json.loads(json.dumps(inventory))
    sliced['_meta']['hostvars'] = {name: sliced['_meta']['hostvars'][name] for name in names}
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
            seen += ['event %s (%s)' % (event.get('counter'), event['event']) for event in self.events if secret in json.dumps(event)]
            seen += ['stdout line %d' % number for number, line in enumerate(self.stdout.splitlines(), 1) if secret in line]
        return seen


def credential_inputs(lab):
    """The fields of the AWX credential for the lab, as a user fills them in (docs/awx.md, step 3)."""
    return {
        'api_url': lab.url,
        'api_user': lab.user,
        'api_token_name': lab.token_name,
        'api_token_secret': lab.token_secret,
        'ca_certificate': Path(lab.cafile).read_text(),
    }


def awx_job(root, lab, collections_path, inventory, playbook, *, check=False, extravars=None, ident='1', project_files=None):
    """Run one AWX job with ansible-runner from a private data directory laid out as AWX lays it out; project_files
    ({path: text}) join the playbooks of docs/awx.md in the project."""
    (root / 'env').mkdir(parents=True)
    envvars, _stored = awx_inject(load_credential_type(), credential_inputs(lab), root)
    envvars.update(
        ANSIBLE_COLLECTIONS_PATH=str(collections_path),
        ANSIBLE_COLLECTIONS_SCAN_SYS_PATH='false',
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_HOME=str(root / '.ansible'),
        ANSIBLE_NOCOLOR='1',
        ANSIBLE_FORCE_COLOR='0',
        # ansible-playbook of the venv, as the execution environment has its own on PATH.
        PATH='%s%s%s' % (Path(sys.executable).parent, os.pathsep, os.environ.get('PATH', '')),
    )
    (root / 'env' / 'envvars').write_text(yaml.safe_dump(envvars))
    job_vars = {
        'awx_job_id': int(ident),
        'awx_inventory_name': INVENTORY_NAME,
        'awx_job_template_name': playbook,
        'tower_job_id': int(ident),
        'tower_inventory_name': INVENTORY_NAME,
    }
    job_vars.update(extravars or {})
    (root / 'env' / 'extravars').write_text(yaml.safe_dump(job_vars))
    (root / 'env' / 'cmdline').write_text('--check --diff' if check else '--diff')
    (root / 'env' / 'settings').write_text(yaml.safe_dump({'suppress_ansible_output': True, 'job_timeout': 900}))
    (root / 'inventory').mkdir()
    script = root / 'inventory' / 'hosts'
    script.write_text('#!%s\nimport json\nprint(json.dumps(%r))\n' % (sys.executable, inventory))
    script.chmod(0o755)
    for path, text in dict(project_files_of_the_guide(), **(project_files or {})).items():
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
def fleet_inventory(lab):
    """Two VMs cloned from the lab's template, stopped (no SSH), each with a cloud-init password to keep secret."""
    hostvars = {
        name: {
            'pve_image': TEMPLATE_VMID,
            'pve_node': 'pve1',
            'pve_cores': 1,
            'pve_memory': 1024,
            'pve_ip': '%s/24' % lab.address(number),
            'pve_gateway': lab.gateway,
            'pve_power': 'stopped',
            'pve_ci_password': CI_PASSWORD,
        }
        for number, name in enumerate(['web1', 'web2'], 1)
    }
    return awx_inventory(lab, hostvars, {'pve_vms': ['web1', 'web2'], 'pve_templates': []})


def test_plan_apply_and_destroy_jobs_do_what_they_show_and_leak_no_secret(lab, tmp_path, collections_path, fleet_inventory):
    """The jobs of docs/awx.md, step 5, in the order a fleet meets them (one lab, so each job starts where the last
    one left the cluster)."""
    jobs = []

    def job(name, playbook='playbooks/site.yml', **options):
        """Run an AWX job; returns it with the number of writes to PVE it made."""
        before = len(lab.writes())
        jobs.append(awx_job(tmp_path / name, lab, collections_path, fleet_inventory, playbook, ident=str(len(jobs) + 1), **options))
        return jobs[-1], len(lab.writes()) - before

    # The plan job (check, show changes): each VM's creation with its diff, and nothing written.
    plan, writes = job('plan', check=True)
    assert plan.status == 'successful', plan.stdout
    for host in ('web1', 'web2'):
        assert plan.outcome(host) == 'changed' and plan.diffs(host), plan.stdout
    # The project's ansible.cfg turns on the plan summary: it ends the job's output.
    assert 'web1: create' in plan.stdout and 'web2: create' in plan.stdout, plan.stdout
    assert writes == 0 and not vms_named(lab, 'web1') and not vms_named(lab, 'web2')

    # The site job applies it.
    site, _writes = job('site')
    assert site.status == 'successful' and site.outcome('web1') == site.outcome('web2') == 'changed', site.stdout
    (web1,) = vms_named(lab, 'web1')
    (web2,) = vms_named(lab, 'web2')
    assert web1['node'] == web2['node'] == 'pve1' and web1['status'] == web2['status'] == 'stopped'

    # A change declared in Git for web2: the next plan shows it, finds web1 as declared, and changes nothing.
    fleet_inventory['_meta']['hostvars']['web2']['pve_memory'] = 2048
    replan, writes = job('replan', check=True)
    assert replan.status == 'successful', replan.stdout
    assert replan.outcome('web1') == 'ok' and not replan.diffs('web1'), replan.stdout
    assert replan.outcome('web2') == 'changed' and '2048' in json.dumps(replan.diffs('web2')), replan.stdout
    assert 'web1: ok' in replan.stdout and 'web2: update' in replan.stdout, replan.stdout
    assert writes == 0 and lab_vms.client(lab).vm_config(web2['node'], web2['vmid'])['memory'] in (1024, '1024')

    # The destroy job: any survey answer but the inventory's name stops it before a write; that name destroys both.
    refused, writes = job('destroy-wrong', 'playbooks/destroy.yml', extravars={'pve_destroy_confirm': 'yes'})
    assert refused.status == 'failed' and "pve_destroy_confirm must be the inventory's name" in refused.stdout, refused.stdout
    assert writes == 0 and vms_named(lab, 'web1') and vms_named(lab, 'web2')
    destroyed, _writes = job('destroy', 'playbooks/destroy.yml', extravars={'pve_destroy_confirm': INVENTORY_NAME})
    assert destroyed.status == 'successful', destroyed.stdout
    assert not vms_named(lab, 'web1') and not vms_named(lab, 'web2')

    # What AWX keeps of every job, its events and its stdout, holds no token secret and no password.
    secrets = [lab.token_secret, lab.password, CI_PASSWORD]
    leaks = ['job %d: %s' % (number, leak) for number, one in enumerate(jobs, 1) for leak in one.leaks(secrets)]
    assert not leaks, leaks


def test_a_slice_waits_for_the_template_another_slice_builds_and_clones_it_once_built(lab, tmp_path, collections_path):
    key, public_key = lab_vms.ssh_key(tmp_path)
    release = tmp_path / 'release'
    # The template's provision file holds its build until the test has seen the other slice wait for it.
    hold = {
        'playbooks/hold.yml': yaml.safe_dump(
            [
                {
                    'name': 'Hold the build',
                    'hosts': 'all',
                    'gather_facts': False,
                    'tasks': [{'name': 'Wait for the release', 'ansible.builtin.wait_for': {'path': str(release), 'timeout': 300}}],
                }
            ]
        )
    }
    hostvars = {
        # No generalization: the lab's guests run their commands on this machine, so the default pve_generalize_root
        # (/) would empty this machine's /etc/machine-id (test_template_bake.py covers generalizing).
        'golden': {
            'pve_image': TEMPLATE_VMID,
            'pve_node': 'pve1',
            'pve_ip': '%s/24' % lab.address(2),
            'pve_gateway': lab.gateway,
            'pve_provision': ['hold.yml'],
            'pve_generalize': False,
        },
        'web1': {'pve_image': 'golden', 'pve_node': 'pve1', 'pve_ip': '%s/24' % lab.address(1), 'pve_gateway': lab.gateway, 'pve_power': 'stopped'},
    }
    inventory = awx_inventory(lab, hostvars, {'pve_templates': ['golden'], 'pve_vms': ['web1']})
    inventory['all']['vars'].update(
        pve_ssh_user='ubuntu',
        pve_ssh_keys=[public_key],
        pve_ssh_private_key_file=str(key),
        pve_guest_python=sys.executable,
        pve_template_wait_delay=1,
        # The lease wait's progress lines, one a second: how the test sees slice 2 waiting (AWX's output is no terminal).
        pve_progress=True,
        pve_progress_interval=1,
    )
    slices = [slice_inventory(inventory, number, 2) for number in (1, 2)]
    # AWX's ordering by name puts the template alone in slice 1 and the VM that needs it in slice 2.
    assert [sorted(one['_meta']['hostvars']) for one in slices] == [['golden'], ['web1']]
    roots = [tmp_path / 'slice1', tmp_path / 'slice2']
    for one, root in zip(slices, roots):
        one['all']['vars']['pve_provision_dir'] = str(root / 'project' / 'playbooks')  # /runner/project/playbooks
    jobs = {}

    def start_slice(index):
        thread = threading.Thread(
            target=lambda: jobs.update(
                {index: awx_job(roots[index], lab, collections_path, slices[index], 'playbooks/site.yml', ident=str(index + 1), project_files=hold)}
            )
        )
        thread.start()
        return thread

    threads = [start_slice(0)]
    assert wait_until(lambda: vms_named(lab, 'golden-build') or not threads[0].is_alive(), timeout=300), 'slice 1 never built'
    threads.append(start_slice(1))
    # Release the build once slice 2 has shown two progress lines of its wait for the build's lease (pve_lease waits in
    # the module; the runner writes each line as an event as it happens).
    events = roots[1] / 'artifacts' / '2' / 'job_events'
    waiting = 'waiting for the lease template/golden'
    # Only whole events: the runner writes each as NAME-partial.json first and renames it, so a partial one can vanish.
    wait_until(
        lambda: (
            len([event for event in events.glob('*.json') if not event.name.endswith('-partial.json') and waiting in event.read_text()]) >= 2
            or not threads[1].is_alive()
        ),
        timeout=300,
    )
    release.write_text('go')
    for thread in threads:
        thread.join(timeout=600)
    assert [jobs[index].status for index in (0, 1)] == ['successful', 'successful'], jobs[0].stdout + jobs[1].stdout
    # Slice 2 waits on slice 1's lease on the build (docs/concurrency.md), asking again while slice 1 holds it.
    lines = [event for event in jobs[1].events if waiting in event.get('stdout', '')]
    taken = [
        event['event_data']['res']
        for event in jobs[1].events
        if event['event'] == 'runner_on_ok' and event['event_data'].get('task', '').endswith('the lease on template/golden')
    ]
    assert len(lines) >= 2 and any(result.get('waited', 0) >= 1 for result in taken), 'slice 2 did not wait for the build:\n%s' % jobs[1].stdout
    (golden,) = vms_named(lab, 'golden')
    (web1,) = vms_named(lab, 'web1')
    assert golden['template'] in (1, True) and web1['node'] == 'pve1'
    # One clone of the lab's image (golden's build), then web1's clone of the finished template.
    clones = [request.path.rsplit('/qemu/', 1)[1] for request in lab.writes() if request.path.endswith('/clone')]
    assert clones == ['%s/clone' % TEMPLATE_VMID, '%s/clone' % golden['vmid']], clones


@pytest.mark.lab(time_scale=1, clone_secs=12)
def test_a_job_with_pve_progress_true_shows_the_progress_of_a_clone_in_its_output_and_events(lab, tmp_path, collections_path, fleet_inventory):
    """A job's output is not a terminal, so progress is off by default (docs/awx.md); the job template's variable
    pve_progress: true shows it in the job output and in the events AWX keeps, as the run's other lines."""
    del fleet_inventory['_meta']['hostvars']['web2']
    fleet_inventory['pve_vms']['hosts'] = ['web1']
    extravars = {'pve_progress': True, 'pve_progress_interval': 1}

    job = awx_job(tmp_path / 'site', lab, collections_path, fleet_inventory, 'playbooks/site.yml', extravars=extravars)
    assert job.status == 'successful' and job.outcome('web1') == 'changed', job.stdout

    line = re.compile(r'^web1: cloning VM %s on pve1 as web1: ([\d.]+)%%, [\d.]+ [KMG]iB/s \[\d+s elapsed\]$' % TEMPLATE_VMID, re.M)
    percents = [float(found) for found in line.findall(job.stdout)]
    assert len(percents) >= 3 and percents == sorted(percents) and percents[-1] < 100, job.stdout
    shown = [event['stdout'] for event in job.events if line.search(event.get('stdout') or '')]
    assert len(shown) == len(percents), shown
