# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Git commit an inventory source lies in, for the plan summary (and the run history): which commit the plan was
made from, and whether the work tree had uncommitted changes. Read with the ``git`` command on the controller; no
Git, or a source outside a work tree, is no commit (None), never an error."""

from __future__ import annotations

import os
import subprocess


def _git(directory, *args):
    try:
        done = subprocess.run(['git', '-C', directory, *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_source(sources):
    """``{'commit', 'dirty', 'work_tree'}`` of the first inventory source (a file or directory; host lists such as
    ``web1,`` are skipped) inside a Git work tree with a commit, or None."""
    for source in sources or ():
        path = os.path.abspath(os.path.expanduser(str(source)))
        if not os.path.exists(path):
            continue
        directory = path if os.path.isdir(path) else os.path.dirname(path)
        top = _git(directory, 'rev-parse', '--show-toplevel')
        commit = _git(directory, 'rev-parse', '--verify', '--quiet', 'HEAD^{commit}') if top else None
        if not commit:
            continue
        # Untracked files count: an inventory file not yet added is an uncommitted change too.
        status = _git(directory, 'status', '--porcelain', '--untracked-files=normal')
        return {'commit': commit.strip(), 'dirty': bool(status and status.strip()), 'work_tree': top.strip()}
    return None


def commit_line(source):
    """The plan's line about its commit, or None."""
    if not source:
        return None
    return 'From commit {0}{1}'.format(source['commit'][:12], ' (the work tree has uncommitted changes)' if source['dirty'] else '')
