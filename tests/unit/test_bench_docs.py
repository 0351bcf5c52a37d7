# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/perf_docs.py (make bench-docs): docs/performance.md's tables rewritten from make bench's JSON, the prose kept."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location('perf_docs', REPO / 'bench' / 'perf_docs.py')
perf_docs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(perf_docs)

MACHINE = {
    'commit': 'abc1234',
    'date': '2026-12-02T07:35:19+00:00',
    'cpus': 2,
    'cpu_model': 'X',
    'memory_gib': 23.5,
    'python': '3.11.7',
    'ansible_core': '2.19.14',
    'fakepve': '0.5.0',
}
PEER = {'ansible': '12.3.0', 'community_proxmox': '1.4.0', 'proxmoxer': '2.3.0', 'ansible_core': '2.19.14'}


def page():
    return 'Prose before.\n' + ''.join(f'<!-- bench:{name} -->\nold {name}\n<!-- /bench:{name} -->\nProse after {name}.\n' for name in perf_docs.SECTIONS)


def test_each_section_the_results_cover_is_rewritten_and_the_prose_and_other_sections_are_kept():
    targets = {
        'machine': MACHINE,
        'peer': PEER,
        'forks': 20,
        'targets': [
            {'target': 'zero drift: wall s at N=100', 'bound': 4, 'measured': 7.4, 'met': False},
            {'target': 'first run: parallel/single wall', 'bound': 2, 'measured': None, 'met': None},
        ],
    }
    growth = {
        'machine': MACHINE,
        'peer': {'marginal_ms_per_machine': 833.3, 'fixed_seconds': 6.8, 'r2': 0.94},
        'ours': {'marginal_ms_per_machine': 36.6, 'fixed_seconds': 5.3, 'r2': 0.24},
    }
    rewritten, kept = perf_docs.render(page(), {'targets': targets, 'growth': growth})
    assert kept == ['zero-drift', 'slowest', 'parallel-create', 'scale']
    assert 'old zero-drift' in rewritten and 'old targets' not in rewritten and 'old growth' not in rewritten
    assert 'Measured at commit abc1234 on 2026-12-02' in rewritten and 'community.proxmox 1.4.0' in rewritten
    assert '| zero drift: wall s at N=100 | 4 | 7.4 | no |' in rewritten
    assert '| first run: parallel/single wall | 2 | - | not measured |' in rewritten
    assert '| ours | 36.6 | 5.3 | 0.24 |' in rewritten and '| peer | 833.3 | 6.8 | 0.94 |' in rewritten
    assert all(f'Prose after {name}.' in rewritten for name in perf_docs.SECTIONS) and rewritten.startswith('Prose before.')
    # Rendering again from the same results changes nothing.
    assert perf_docs.render(rewritten, {'targets': targets, 'growth': growth})[0] == rewritten


def test_the_scale_point_is_one_row_of_ours_with_module_runs_and_processes():
    ours = {
        'wall_seconds': 29.655,
        'api_requests': 501,
        'module_runs': 1,
        'module_processes': 0,
        'ssh_connections': 0,
        'peak_rss_mb': 89.2,
        'peak_tree_rss_mb': 166.9,
        'changed_tasks': 0,
    }
    rewritten, kept = perf_docs.render(page(), {'scale': {'machine': MACHINE, 'peer': PEER, 'n': 500, 'ours': ours}})
    assert 'scale' not in kept and 'old scale' not in rewritten
    assert '| 500 | ours | 29.655 | 501 | 1 | 0 | 0 | 89.2 | 166.9 | 0 |' in rewritten


def test_a_page_without_a_section_is_refused_naming_the_marker():
    with pytest.raises(SystemExit, match='bench:growth'):
        perf_docs.render(page().replace('<!-- bench:growth -->', ''), {'growth': {}})
