# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make bench-docs: the figures of docs/performance.md from the last make bench (bench/results/*.json).

    .venv/bin/python bench/perf_docs.py [--results bench/results] [--docs docs/performance.md]

Each table of the page sits between <!-- bench:NAME --> and <!-- /bench:NAME --> and is rewritten from the JSON of
the scenario it shows; the prose around the tables, which says what the figures call for, is written by hand.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent


# The scenarios whose JSON says what the machine and the peer were (not growth's: its 'peer' is the peer's fit).
MACHINE_SOURCES = ('targets', 'zero-drift', 'parallel-create')


def _row(cells):
    return '| ' + ' | '.join(str(cell) for cell in cells) + ' |'


def _table(headers, rows, align):
    return '\n'.join([_row(headers), _row(align), *(_row(row) for row in rows)])


def machine(results):
    any_scenario = next(results[name] for name in MACHINE_SOURCES if name in results)
    box, peer = any_scenario['machine'], any_scenario['peer']
    return (
        f"Measured at commit {box['commit']} on {box['date'][:10]}: {box['cpus']} vCPUs ({box['cpu_model']}), "
        f"{box['memory_gib']} GiB, Python {box['python']}, ansible-core {box['ansible_core']}, fakepve {box['fakepve']} "
        f"with the project's lab. The peer: `ansible` {peer['ansible']} (community.proxmox {peer['community_proxmox']}, "
        f"proxmoxer {peer['proxmoxer']}) on ansible-core {peer['ansible_core']}. {any_scenario['forks']} forks on both sides."
    )


def zero_drift_rows(data):
    """Per size, each side's figures and the ratios (also make bench's own table)."""
    rows = []
    for point in data['sizes']:
        for side in ('ours', 'peer'):
            figures = point[side]
            keys = ('wall_seconds', 'api_requests', 'module_runs', 'module_processes', 'ssh_connections', 'peak_rss_mb', 'peak_tree_rss_mb', 'changed_tasks')
            rows.append([point['n'], side, *(figures.get(key, '-') for key in keys)])
        ratio = point['ratio_ours_over_peer']
        rows.append([point['n'], 'ours/peer', ratio['wall_seconds'], ratio['api_requests'], ratio.get('module_runs', '-'), '', '', '', '', ''])
    return rows


def zero_drift(data):
    headers = ['N', 'side', 'wall s', 'API requests', 'module runs', 'module processes', 'SSH', 'peak RSS MB (largest process)', 'tree RSS MB', 'changed']
    return _table(headers, zero_drift_rows(data), ['--:', '---', '--:', '--:', '--:', '--:', '--:', '--:', '--:', '--:'])


def slowest(data):
    """Our slowest tasks at the largest N."""
    point = max(data['sizes'], key=lambda point: point['n'])
    rows = [[task, seconds] for task, seconds in point['ours']['slowest_tasks']]
    return f"At N = {point['n']}, ours:\n\n" + _table(['task', 's'], rows, ['---', '--:'])


def growth_rows(data):
    """Each side's fit (also make bench's own table)."""
    return [
        [side, fit['marginal_ms_per_machine'], fit['fixed_seconds'], fit['r2']] if fit else [side, '-', '-', '-']
        for side, fit in (('ours', data['ours']), ('peer', data['peer']))
    ]


def growth(data):
    return _table(['side', 'marginal ms per unchanged VM', 'fixed s', 'r²'], growth_rows(data), ['---', '--:', '--:', '--:'])


def parallel_create(data):
    rows = []
    for side in ('ours', 'peer'):
        single, parallel = data[side]['single'], data[side]['parallel']
        rows.append(
            [
                side,
                single['wall_seconds'],
                parallel['wall_seconds'],
                f"{parallel['created']}/{data['vms']}",
                parallel['running'],
                parallel['failed_hosts_or_tasks'],
                parallel.get('module_runs', '-'),
                parallel['module_processes'],
                data[side]['parallel_over_single_wall'],
            ]
        )
    headers = ['side', 'one VM, s', f"{data['vms']} VMs, s", 'created', 'running', 'failures', 'module runs', 'module processes', 'parallel / one']
    return _table(headers, rows, ['---', '--:', '--:', '--:', '--:', '--:', '--:', '--:', '--:'])


def scale_rows(data):
    """Ours at the scale point (also make bench's own table)."""
    ours = data['ours']
    keys = ('wall_seconds', 'api_requests', 'module_runs', 'module_processes', 'ssh_connections', 'peak_rss_mb', 'peak_tree_rss_mb', 'changed_tasks')
    return [[data['n'], 'ours', *(ours.get(key, '-') for key in keys)]]


def scale(data):
    headers = ['N', 'side', 'wall s', 'API requests', 'module runs', 'module processes', 'SSH', 'peak RSS MB (largest process)', 'tree RSS MB', 'changed']
    return _table(headers, scale_rows(data), ['--:', '---', '--:', '--:', '--:', '--:', '--:', '--:', '--:', '--:'])


def targets(data):
    rows = [
        [t['target'], t['bound'], '-' if t['measured'] is None else t['measured'], {True: 'yes', False: 'no', None: 'not measured'}[t['met']]]
        for t in data['targets']
    ]
    return _table(['target', 'at most', 'measured', 'met'], rows, ['---', '--:', '--:', '---'])


SECTIONS = {
    'machine': (None, machine),
    'zero-drift': ('zero-drift', zero_drift),
    'slowest': ('zero-drift', slowest),
    'growth': ('growth', growth),
    'parallel-create': ('parallel-create', parallel_create),
    'scale': ('scale', scale),
    'targets': ('targets', targets),
}


def render(page, results):
    """page with each marked section that the results cover rewritten; the names of those left as they were."""
    kept = []
    for name, (scenario, make) in SECTIONS.items():
        pattern = re.compile(rf'(<!-- bench:{name} -->\n).*?(\n<!-- /bench:{name} -->)', re.S)
        if not pattern.search(page):
            raise SystemExit(f'docs: the page has no section <!-- bench:{name} --> ... <!-- /bench:{name} -->')
        covered = scenario in results if scenario else any(name in results for name in MACHINE_SOURCES)
        if not covered:
            kept.append(name)
            continue
        text = make(results if scenario is None else results[scenario])
        page = pattern.sub(lambda found, text=text: found.group(1) + text + found.group(2), page)
    return page, kept


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--results', type=pathlib.Path, default=HERE / 'results')
    parser.add_argument('--docs', type=pathlib.Path, default=HERE.parent / 'docs' / 'performance.md')
    args = parser.parse_args(argv)
    results = {path.stem: json.loads(path.read_text(encoding='utf-8')) for path in sorted(args.results.glob('*.json'))}
    if not results:
        raise SystemExit(f'docs: no results in {args.results}: run make bench first')
    page, kept = render(args.docs.read_text(encoding='utf-8'), results)
    args.docs.write_text(page, encoding='utf-8')
    print(f'docs: {args.docs} rewritten from {", ".join(results)}' + (f'; left as they were: {", ".join(kept)}' if kept else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
