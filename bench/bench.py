# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make bench: puls.proxmox against community.proxmox on the lab, each scenario on its own lab.

    hacking/netns-run .venv/bin/python bench/bench.py [--sizes 10,50,100] [--create 20] [--repeat 3]

Scenarios (bench/README.md): zero-drift (with the peer side by side, alternating), growth (fitted from the
zero-drift sizes), parallel-create. Prints a table and writes bench/results/<scenario>.json.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / 'tests'), str(REPO / '.build' / 'collections')]

import fleets  # noqa: E402
import measure  # noqa: E402
import perf_docs  # noqa: E402
from lab.serving import Lab  # noqa: E402

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient  # noqa: E402

OURS_BIN = pathlib.Path(sys.executable).parent
# Clone tasks of 30 PVE seconds that take about one real second each.
CLONE_SECS = 30
CLONE_TIME_SCALE = 1 / 30
# The targets of docs/performance.md: (what, how it is read from the results, the bound, whether lower is better).
TARGETS = (
    ('zero drift: marginal ms per unchanged machine', ('growth', 'ours', 'marginal_ms_per_machine'), 20),
    ('zero drift: wall s at N=100', ('zero-drift', 100, 'ours', 'wall_seconds'), 4),
    ('zero drift: ours/peer wall at N=50', ('zero-drift', 50, 'ratio', 'wall_seconds'), 0.06),
    ('zero drift: ours/peer wall at N=100', ('zero-drift', 100, 'ratio', 'wall_seconds'), 0.06),
    ('zero drift: API requests over N+1 (largest N)', ('zero-drift', 'max', 'ours', 'requests_over_n_plus_1'), 0),
    ('zero drift: module runs (largest N)', ('zero-drift', 'max', 'ours', 'module_runs'), 1),
    ('zero drift: SSH connections (largest N)', ('zero-drift', 'max', 'ours', 'ssh_connections'), 0),
    ('first run: module runs per created machine', ('parallel-create', 'ours', 'modules_per_created'), 3),
    ('first run: parallel/single wall', ('parallel-create', 'ours', 'parallel_over_single_wall'), 2),
    ('first run: parallel creations failed or missing', ('parallel-create', 'ours', 'missing_or_failed'), 0),
)


# ------------------------------------------------------------------ runs


class Side:
    """ours (puls.proxmox.site from this checkout) or the peer (community.proxmox from its venv)."""

    def __init__(self, name, ansible_bin, playbook, env):
        self.name, self.ansible_bin, self.playbook, self.env = name, ansible_bin, playbook, env

    def run(self, lab, workdir, inventory, label, forks):
        result = measure.run_playbook(lab, workdir, self.ansible_bin, self.playbook, inventory, self.env, label, forks)
        print(
            f'  {label:<28} rc={result.rc} {result.wall_seconds:7.2f} s {result.api_requests:5d} requests '
            f'{result.module_runs:4d} module runs ({result.module_processes} processes) {result.ssh_connections:3d} ssh',
            flush=True,
        )
        return result


def ours_side(lab, workdir):
    return Side('ours', OURS_BIN, fleets.write_ours(workdir), dict(fleets.ours_env(lab), ANSIBLE_COLLECTIONS_PATH=str(measure.COLLECTIONS)))


def sides(lab, workdir, peer_bin):
    ours = ours_side(lab, workdir)
    # The peer's venv has its collections (community.proxmox among them) in its own site-packages.
    peer = Side('peer', peer_bin, fleets.write_peer(lab, workdir), dict(fleets.peer_env(lab), ANSIBLE_COLLECTIONS_PATH=str(workdir / 'peer-collections')))
    return ours, peer


def fresh_lab(workdir, **options):
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    # The lab takes the next free address block (it moves on when another process serves on one).
    return Lab(workdir / 'lab', **options)


def must_succeed(result, what):
    if result.rc != 0:
        raise SystemExit(f'{what} failed (rc {result.rc}):\n{result.stdout_tail}')
    return result


def summary(runs):
    """The median of each figure over repeated runs, and every run's own figures."""
    keys = (
        'wall_seconds',
        'api_requests',
        'api_writes',
        'module_processes',
        'module_runs',
        'ssh_connections',
        'peak_rss_mb',
        'peak_tree_rss_mb',
        'changed_tasks',
        'failed_tasks',
    )
    median = {key: _number(statistics.median(getattr(run, key) for run in runs)) for key in keys}
    median['modules'] = runs[-1].modules
    median['slowest_tasks'] = runs[-1].slowest_tasks
    median['api_requests_by_path'] = runs[-1].api_requests_by_path
    median['runs'] = [{key: getattr(run, key) for key in keys} for run in runs]
    return median


def _number(value):
    return int(value) if float(value).is_integer() else round(value, 3)


def ratio(ours, peer):
    return round(ours / peer, 3) if peer else None


# ------------------------------------------------------------------ scenarios


def zero_drift(args, peer_bin):
    """For each N, ascending: the first N VMs converged by ours (not measured), then runs that declare them, ours and
    the peer alternating. The cluster holds the N VMs the runs declare and nothing else of theirs: an owned VM that
    no run declares is an orphan, which the plan reports (one read more), so it is no zero drift."""
    workdir = args.results / 'work' / 'zero-drift'
    points = []
    with fresh_lab(workdir) as lab:
        ours, peer = sides(lab, workdir, peer_bin)
        for size in sorted(args.sizes):
            inventory = fleets.write_inventory(lab, workdir, size)
            print(f'zero-drift: converging {size} VMs (not measured)', flush=True)
            converge = must_succeed(ours.run(lab, workdir, inventory, f'converge-{size}', args.forks), f'converging {size} VMs with puls.proxmox.site')
            runs = {'ours': [], 'peer': []}
            for repeat in range(args.repeat):
                for side in (ours, peer):
                    result = side.run(lab, workdir, inventory, f'{side.name}-{size}-{repeat + 1}', args.forks)
                    runs[side.name].append(must_succeed(result, f'{side.name} zero-drift run at N={size}'))
            point = {
                'n': size,
                'cluster_vms': size,
                'converge_wall_seconds': converge.wall_seconds,
                'ours': summary(runs['ours']),
                'peer': summary(runs['peer']),
            }
            point['ratio_ours_over_peer'] = {key: ratio(point['ours'][key], point['peer'][key]) for key in ('wall_seconds', 'api_requests', 'module_runs')}
            points.append(point)
    return points


def scale_point(args):
    """Ours alone at args.scale VMs, on a lab of its own: converged first (not measured), then args.repeat zero-drift
    runs. Its VMs take DHCP and no provision file, as the lab's block has no static address for each of them and 500
    SSH guests are more than the seeding is worth: they are stopped (a running VM is an SSH guest of the lab). The pass
    reads each VM's config as at the other sizes."""
    workdir = args.results / 'work' / 'scale'
    with fresh_lab(workdir) as lab:
        ours = ours_side(lab, workdir)
        inventory = fleets.write_inventory(lab, workdir, args.scale, provision=False, pin_vmid=False, dhcp=True)
        print(f'scale: converging {args.scale} VMs (not measured)', flush=True)
        converge = must_succeed(ours.run(lab, workdir, inventory, f'converge-{args.scale}', args.forks), f'converging {args.scale} VMs with puls.proxmox.site')
        runs = [
            must_succeed(ours.run(lab, workdir, inventory, f'ours-{args.scale}-{repeat + 1}', args.forks), f'ours at N={args.scale}')
            for repeat in range(args.repeat)
        ]
    return {'n': args.scale, 'converge_wall_seconds': converge.wall_seconds, 'ours': summary(runs)}


def linear_fit(points, side):
    """Least-squares wall = intercept + slope * N over the sizes: slope is the marginal cost of one machine."""
    xs = [point['n'] for point in points]
    ys = [point[side]['wall_seconds'] for point in points]
    if len(set(xs)) < 2:
        return None
    slope, intercept = statistics.linear_regression(xs, ys)
    predicted = [intercept + slope * x for x in xs]
    spread = sum((y - statistics.fmean(ys)) ** 2 for y in ys)
    r2 = 1 - sum((y - p) ** 2 for y, p in zip(ys, predicted)) / spread if spread else 1.0
    return {'marginal_ms_per_machine': round(slope * 1000, 1), 'fixed_seconds': round(intercept, 3), 'r2': round(r2, 4)}


def growth(points):
    return {
        'points': [{'n': p['n'], 'ours_wall_seconds': p['ours']['wall_seconds'], 'peer_wall_seconds': p['peer']['wall_seconds']} for p in points],
        'ours': linear_fit(points, 'ours'),
        'peer': linear_fit(points, 'peer'),
    }


def created_vms(lab):
    """(created, running) VMs of the lab other than the template."""
    client = PveClient(lab.url, lab.user, lab.token_name, lab.token_secret, ca_path=str(lab.cafile))
    vms = [vm for vm in client.cluster_vms() if int(vm['vmid']) != fleets.TEMPLATE_VMID]
    return len(vms), sum(1 for vm in vms if vm.get('status') == 'running')


def parallel_create(args, peer_bin):
    """One clone, then args.create clones at once, from the template, each side on fresh labs. Ours allocates the
    VMIDs itself (no pve_vmid: the case the VMID races hit); the peer's clone needs its VMID pinned."""
    outcome = {'clone_pve_seconds': CLONE_SECS, 'time_scale': round(CLONE_TIME_SCALE, 5), 'vms': args.create, 'ours_clone_concurrency': args.create}
    for side_name in ('ours', 'peer'):
        outcome[side_name] = {}
        for count in (1, args.create):
            workdir = args.results / 'work' / 'parallel-create' / f'{side_name}-{count}'
            with fresh_lab(workdir, time_scale=CLONE_TIME_SCALE, clone_secs=CLONE_SECS) as lab:
                side = dict(zip(('ours', 'peer'), sides(lab, workdir, peer_bin)))[side_name]
                # Ours is told to clone them all at once, as a user creating that many declares (the default bound is 4).
                inventory = fleets.write_inventory(lab, workdir, count, provision=False, pin_vmid=side_name == 'peer', clone_concurrency=count)
                result = side.run(lab, workdir, inventory, f'create-{side_name}-{count}', args.forks)
                created, running = created_vms(lab)
            outcome[side_name]['single' if count == 1 else 'parallel'] = {
                'wall_seconds': result.wall_seconds,
                'rc': result.rc,
                'failed_hosts_or_tasks': result.failed_tasks,
                'created': created,
                'running': running,
                'api_requests': result.api_requests,
                'module_processes': result.module_processes,
                'module_runs': result.module_runs,
                'failure_output': result.stdout_tail if result.rc else '',
            }
        single, parallel = outcome[side_name]['single'], outcome[side_name]['parallel']
        outcome[side_name]['parallel_over_single_wall'] = ratio(parallel['wall_seconds'], single['wall_seconds'])
    return outcome


# ------------------------------------------------------------------ report


def machine():
    def version(package, python):
        code = f'import importlib.metadata as m; print(m.version({package!r}))'
        done = subprocess.run([str(python), '-c', code], capture_output=True, text=True, check=False)
        return done.stdout.strip() or None

    cpu = next(
        (line.split(':', 1)[1].strip() for line in open('/proc/cpuinfo', encoding='ascii', errors='replace') if line.startswith('model name')),
        platform.processor(),
    )
    commit = subprocess.run(['git', '-C', str(REPO), 'describe', '--always', '--dirty'], capture_output=True, text=True, check=False).stdout.strip()
    return {
        'cpus': os.cpu_count(),
        'cpu_model': cpu,
        'memory_gib': round(os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30, 1),
        'python': platform.python_version(),
        'ansible_core': importlib.metadata.version('ansible-core'),
        'fakepve': importlib.metadata.version('fakepve'),
        'commit': commit,
        'date': datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds'),
    }


def peer_versions(peer_bin):
    manifest = next((peer_bin.parent / 'lib').glob('python*/site-packages/ansible_collections/community/proxmox/MANIFEST.json'))
    code = 'import importlib.metadata as m; print(m.version("ansible"), m.version("ansible-core"), m.version("proxmoxer"))'
    ansible, core, proxmoxer = subprocess.run([str(peer_bin / 'python'), '-c', code], capture_output=True, text=True, check=True).stdout.split()
    return {
        'community_proxmox': json.loads(manifest.read_text())['collection_info']['version'],
        'ansible': ansible,
        'ansible_core': core,
        'proxmoxer': proxmoxer,
    }


def table(rows, headers):
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = ['  '.join(str(cell).rjust(width) for cell, width in zip(row, widths)) for row in [headers] + rows]
    lines.insert(1, '  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def _measured(results, path):
    """The figure a target's path names in the results, or None when that scenario or size did not run."""
    scenario, *rest = path
    if scenario == 'zero-drift' and scenario in results:
        sizes = {point['n']: point for point in results[scenario]['sizes']}
        point = sizes.get(max(sizes) if rest[0] == 'max' else rest[0])
        if point is None:
            return None
        side = point['ratio_ours_over_peer'] if rest[1] == 'ratio' else point[rest[1]]
        if rest[2] == 'requests_over_n_plus_1':
            return side['api_requests'] - (point['n'] + 1)
        return side[rest[2]]
    if scenario == 'growth' and scenario in results:
        fit = results[scenario][rest[0]]
        return fit and fit[rest[1]]
    if scenario == 'parallel-create' and scenario in results:
        side = results[scenario][rest[0]]
        parallel = side['parallel']
        derived = {
            'modules_per_created': round(parallel['module_runs'] / parallel['created'], 2) if parallel['created'] else None,
            'missing_or_failed': results[scenario]['vms'] - parallel['created'] + parallel['failed_hosts_or_tasks'],
        }
        return derived.get(rest[1], side.get(rest[1]))
    return None


def verdicts(results):
    """Each target of TARGETS, what this run measured of it, and whether it is met (None: not measured)."""
    judged = []
    for target, path, bound in TARGETS:
        measured = _measured(results, path)
        judged.append({'target': target, 'bound': bound, 'measured': measured, 'met': None if measured is None else measured <= bound})
    return judged


RUN_HEADERS = ['N', 'side', 'wall s', 'API req', 'module runs', 'processes', 'SSH', 'peak RSS MB', 'tree RSS MB', 'changed']


def report(results):
    out = []
    if 'zero-drift' in results:
        rows = perf_docs.zero_drift_rows(results['zero-drift'])
        out.append('zero-drift ({0} runs each, alternating; medians)'.format(results['zero-drift']['repeat']))
        out.append(table(rows, RUN_HEADERS))
    if 'scale' in results:
        out.append('\nscale (ours only; {0} runs; medians)'.format(results['scale']['repeat']))
        out.append(table(perf_docs.scale_rows(results['scale']), RUN_HEADERS))
    if 'growth' in results:
        out.append('\ngrowth (least squares: wall = fixed + marginal x N)')
        rows = perf_docs.growth_rows(results['growth'])
        out.append(table(rows, ['side', 'marginal ms/VM', 'fixed s', 'r2']))
    if 'parallel-create' in results:
        create = results['parallel-create']
        out.append('\nparallel create ({0} clones of {1} PVE-s at time scale {2})'.format(create['vms'], create['clone_pve_seconds'], create['time_scale']))
        rows = []
        for side in ('ours', 'peer'):
            for kind in ('single', 'parallel'):
                run = create[side][kind]
                rows.append(
                    [
                        side,
                        kind,
                        run['wall_seconds'],
                        '{0}/{1}'.format(run['created'], 1 if kind == 'single' else create['vms']),
                        run['running'],
                        run['failed_hosts_or_tasks'],
                        run['rc'],
                    ]
                )
            rows.append([side, 'parallel/single', create[side]['parallel_over_single_wall'], '', '', '', ''])
        out.append(table(rows, ['side', 'run', 'wall s', 'created', 'running', 'failures', 'rc']))
    return '\n'.join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', default='10,50,100', help='zero-drift fleet sizes, comma-separated (default 10,50,100)')
    parser.add_argument('--create', type=int, default=20, help='VMs created at once in parallel-create (default 20)')
    parser.add_argument('--repeat', type=int, default=3, help='alternating zero-drift runs per side and size (default 3)')
    parser.add_argument('--forks', type=int, default=20, help='ansible forks of every run, both sides (default 20)')
    parser.add_argument('--scenarios', default='zero-drift,growth,parallel-create', help='any of zero-drift, growth, parallel-create, scale')
    parser.add_argument('--scale', type=int, default=500, help='VMs of the scale scenario, ours only (default 500)')
    parser.add_argument('--results', type=pathlib.Path, default=HERE / 'results')
    parser.add_argument('--peer-venv', type=pathlib.Path, default=HERE / '.peer-venv')
    args = parser.parse_args(argv)
    args.sizes = [int(size) for size in args.sizes.split(',') if size]
    scenarios = set(args.scenarios.split(','))
    unknown = scenarios - {'zero-drift', 'growth', 'parallel-create', 'scale'}
    if unknown or any(not 1 <= size <= fleets.MAX_MACHINES for size in args.sizes + [args.create]) or args.scale < 1:
        parser.error(f'scenarios are zero-drift, growth, parallel-create, scale; sizes 1..{fleets.MAX_MACHINES}')
    peer_bin = args.peer_venv.absolute() / 'bin'
    if not (peer_bin / 'ansible-playbook').exists():
        parser.error(f'no peer venv at {args.peer_venv}: run bench/peer-venv first (make bench does)')
    args.results.mkdir(parents=True, exist_ok=True)

    common = {
        'machine': machine(),
        'peer': peer_versions(peer_bin),
        'forks': args.forks,
        'ours_measured': 'ansible-playbook puls.proxmox.site (roles/reconcile) from this checkout',
    }
    results = {}
    started = time.monotonic()
    if scenarios & {'zero-drift', 'growth'}:
        points = zero_drift(args, peer_bin)
        results['zero-drift'] = dict(common, repeat=args.repeat, sizes=points)
        if 'growth' in scenarios:
            results['growth'] = dict(common, **growth(points))
    if 'parallel-create' in scenarios:
        results['parallel-create'] = dict(common, **parallel_create(args, peer_bin))
    if 'scale' in scenarios:
        results['scale'] = dict(common, repeat=args.repeat, **scale_point(args))
    for scenario, data in results.items():
        (args.results / f'{scenario}.json').write_text(json.dumps(data, indent=2) + '\n', encoding='utf-8')
    judged = verdicts(results)
    (args.results / 'targets.json').write_text(json.dumps(dict(common, targets=judged), indent=2) + '\n', encoding='utf-8')
    print('\n' + report(results))
    rows = [[t['target'], t['bound'], '-' if t['measured'] is None else t['measured'], t['met']] for t in judged]
    print('\ntargets\n' + table(rows, ['target', 'at most', 'measured', 'met']))
    print(f'\nbench: {time.monotonic() - started:.0f} s; JSON in {args.results}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
