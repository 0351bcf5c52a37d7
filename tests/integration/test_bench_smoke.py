# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make bench, small: every scenario of bench/bench.py at N=2 on its own lab (the script starts it), and what its JSON
says. The figures themselves are benchmarks, not timed tests: these assert what each run did, never how fast."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from playbooks import REPO

PEER_VENV = REPO / 'bench' / '.peer-venv'


def bench(tmp_path, *args):
    """Run bench/bench.py with args, results under tmp_path; returns {scenario: its JSON}."""
    if not (PEER_VENV / 'bin' / 'ansible-playbook').exists():
        pytest.fail('the peer venv is missing: run `make bench/.peer-venv/.installed` (make integration does)')
    results = tmp_path / 'results'
    done = subprocess.run(
        [sys.executable, str(REPO / 'bench' / 'bench.py'), '--results', str(results), '--forks', '4', *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {path.stem: json.loads(path.read_text()) for path in results.glob('*.json')}, done.stdout


@pytest.mark.slow(minutes=2)
def test_zero_drift_counts_requests_modules_and_no_ssh_for_both_sides_and_fits_growth_over_the_sizes(tmp_path):
    results, table = bench(tmp_path, '--scenarios', 'zero-drift,growth', '--sizes', '1,2', '--repeat', '1')
    assert set(results) == {'zero-drift', 'growth', 'targets'}
    zero = results['zero-drift']
    assert zero['peer']['community_proxmox'] == '1.4.0' and zero['machine']['cpus'] >= 1
    assert [point['n'] for point in zero['sizes']] == [1, 2]
    for point in zero['sizes']:
        ours, peer = point['ours'], point['peer']
        # Converged: our run changes nothing and opens no SSH connection; the peer's update reports a change per VM.
        assert (ours['changed_tasks'], ours['ssh_connections'], ours['failed_tasks']) == (0, 0, 0)
        assert (peer['changed_tasks'], peer['ssh_connections'], peer['failed_tasks']) == (point['n'], 0, 0)
        # Ours: one pass over the fleet, whatever its size: one listing of the cluster, then one config read per VM.
        # That pass runs in the task's worker (plugins/plugin_utils/_in_worker.py): a module run, no process.
        assert ours['modules'] == {'in-worker:puls.proxmox.pve_fleet_info': 1}
        assert (ours['module_runs'], ours['module_processes']) == (1, 0)
        assert ours['api_requests_by_path']['GET /api2/json/cluster/resources'] == 1
        assert ours['api_requests_by_path']['GET /api2/json/nodes/{node}/qemu/{vmid}/config'] == point['n']
        assert peer['modules'] == {'community.proxmox.proxmox_kvm': 3 * point['n']}
        for figures in (ours, peer):
            assert figures['wall_seconds'] > 0 and figures['api_requests'] > 0 and figures['peak_rss_mb'] > 0
            assert sum(figures['api_requests_by_path'].values()) == figures['api_requests']
            assert figures['slowest_tasks'] and all(seconds >= 0 for _task, seconds in figures['slowest_tasks'])
        # A converged VM costs ours no write; the peer's update writes its config every time.
        assert ours['api_writes'] == 0 and peer['api_requests_by_path']['PUT /api2/json/nodes/{node}/qemu/{vmid}/config'] == point['n']
        assert peer['module_runs'] == peer['module_processes']
        assert point['ratio_ours_over_peer']['module_runs'] == round(ours['module_runs'] / peer['module_runs'], 3)
    # One more declared machine costs the peer exactly its three module processes.
    assert zero['sizes'][1]['peer']['module_processes'] - zero['sizes'][0]['peer']['module_processes'] == 3
    growth = results['growth']
    assert [p['n'] for p in growth['points']] == [1, 2]
    assert growth['ours']['r2'] == 1.0 and isinstance(growth['peer']['marginal_ms_per_machine'], float)
    assert 'ours/peer' in table and 'marginal ms/VM' in table
    # Each target is judged from the figures above, or marked unmeasured (no size 50 or 100, no parallel create).
    judged = {target['target']: target for target in results['targets']['targets']}
    largest = zero['sizes'][1]['ours']
    assert judged['zero drift: module runs (largest N)'] == {
        'target': 'zero drift: module runs (largest N)',
        'bound': 1,
        'measured': largest['module_runs'],
        'met': largest['module_runs'] <= 1,
    }
    assert judged['zero drift: API requests over N+1 (largest N)']['measured'] == largest['api_requests'] - 3
    assert judged['zero drift: marginal ms per unchanged machine']['measured'] == growth['ours']['marginal_ms_per_machine']
    assert judged['zero drift: wall s at N=100']['met'] is None and judged['first run: parallel/single wall']['met'] is None
    assert 'targets' in table


@pytest.mark.slow(minutes=2)
def test_parallel_create_clones_every_vm_on_both_sides_and_compares_with_one_clone(tmp_path):
    results, table = bench(tmp_path, '--scenarios', 'parallel-create', '--create', '2')
    create = results['parallel-create']
    assert (create['vms'], create['clone_pve_seconds']) == (2, 30)
    for side in ('ours', 'peer'):
        single, parallel = create[side]['single'], create[side]['parallel']
        assert (single['created'], single['running'], single['rc']) == (1, 1, 0)
        assert (parallel['created'], parallel['running'], parallel['rc'], parallel['failed_hosts_or_tasks']) == (2, 2, 0, 0)
        assert create[side]['parallel_over_single_wall'] == round(parallel['wall_seconds'] / single['wall_seconds'], 3)
    assert 'parallel/single' in table
    judged = {target['target']: target for target in results['targets']['targets']}
    parallel = create['ours']['parallel']
    assert judged['first run: module runs per created machine']['measured'] == round(parallel['module_runs'] / 2, 2)
    # The two creations and the pass, with the leases taken and released together: each run in the worker.
    assert (parallel['module_runs'], parallel['module_processes']) == (5, 0)
    assert judged['first run: parallel creations failed or missing']['measured'] == 0
    assert judged['first run: parallel/single wall']['measured'] == create['ours']['parallel_over_single_wall']


def test_the_scale_point_reconciles_ours_alone_at_its_size_and_make_bench_docs_shows_it(tmp_path):
    results, table = bench(tmp_path, '--scenarios', 'scale', '--scale', '3', '--repeat', '1')
    scale = results['scale']
    # Ours alone: 'peer' names only the peer's versions, as in every scenario's JSON.
    assert scale['n'] == 3 and 'wall_seconds' not in scale['peer'] and 'scale (ours only' in table
    ours = scale['ours']
    # Converged: the run changes nothing, opens no SSH connection, reads the listing and each VM's config once.
    assert (ours['changed_tasks'], ours['failed_tasks'], ours['ssh_connections'], ours['api_writes']) == (0, 0, 0, 0)
    assert ours['api_requests_by_path']['GET /api2/json/nodes/{node}/qemu/{vmid}/config'] == 3
    assert (ours['module_runs'], ours['module_processes']) == (1, 0) and ours['peak_rss_mb'] > 0
    docs = tmp_path / 'performance.md'
    docs.write_text((REPO / 'docs' / 'performance.md').read_text(encoding='utf-8'), encoding='utf-8')
    done = subprocess.run(
        [sys.executable, str(REPO / 'bench' / 'perf_docs.py'), '--results', str(tmp_path / 'results'), '--docs', str(docs)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    section = docs.read_text(encoding='utf-8').split('<!-- bench:scale -->\n')[1].split('\n<!-- /bench:scale -->')[0]
    assert section.splitlines()[2].startswith('| 3 | ours | ') and section.splitlines()[2].endswith(' | 0 |')
