# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a provision file's hash covers: the file and everything it pulls in when it runs (its closure).

A ``.yml``/``.yaml`` playbook pulls in, statically and recursively:

* ``import_playbook`` targets (relative to the importing playbook's directory);
* ``vars_files`` (an inner list is Ansible's first-found list: every entry of it that exists counts);
* roles from a play's ``roles:``, from ``include_role``/``import_role`` tasks and from a role's
  ``meta/main.yml`` dependencies; a role counts as its whole directory;
* ``import_tasks``/``include_tasks`` task files, in ``pre_tasks``, ``tasks``, ``post_tasks``,
  ``handlers`` and inside ``block``/``rescue``/``always``. A task file is looked up as Ansible does:
  next to the file naming it, then in the playbook's directory; inside a role, next to the file
  naming it, then in the role's ``tasks/``, then in the role's root.

A role is looked up as ``ansible-playbook`` does: ``<playbook dir>/roles/NAME``, each directory of
``roles_path`` (the caller passes ANSIBLE_ROLES_PATH / ansible.cfg ``roles_path``), for a meta
dependency the directory holding the depending role, then ``<playbook dir>/NAME``. Every YAML file
under a role's ``tasks/`` and ``handlers/`` is scanned for the roles and task files it pulls in (a
task file that is never used may so add to the hash; a change is never missed). A collection role or
playbook (``ns.coll.name``) that is not found on those paths is not hashed and not reported: pin the
collection version instead. ``include_vars``, ``template``/``copy`` sources outside a role and other
module arguments are not followed: list such files in ``hash_include``.

A reference that cannot be resolved statically (a Jinja path, a role or file that is not found, a
free-form ``include_role``) is skipped and reported in ``Closure.unresolved`` for the caller to warn
about; Ansible itself will resolve it, or fail, when the file runs.

``.pp``, ``.sh`` files, and every file in ``file`` mode, are the file alone. ``hash_include`` paths
(files or directories) count for every provision file, in both modes.

The hash is the first 12 hex digits of the SHA-256 (``short_hash``) of the sorted (name, SHA-256 of
content) pairs of the closure, where a name never contains an absolute path: a role's file is named
``roles/ROLE/PATH-IN-ROLE`` wherever the role was found, any other file by its path relative to the
provision file's directory. Moving the checkout (with its roles) therefore keeps every hash. A
closure of just the file hashes as the file's bytes, as Puls hashed every file, so a block Puls
wrote reads as applied. ``__pycache__``, ``*.pyc`` and VCS directories (``.git``...) never count:
Ansible writes the former into roles with plugins, and the latter change on every fetch.

I/O: reads the files; writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, TypeGuard

from ansible_collections.puls.proxmox.plugins.module_utils._provision_hash import short_hash

try:
    import yaml
except ImportError:
    HAS_YAML = False
    YAML_IMPORT_ERROR: str | None = traceback.format_exc()
else:
    HAS_YAML = True
    YAML_IMPORT_ERROR = None

    class _OpaqueTagLoader(yaml.SafeLoader):
        """SafeLoader that reads a value with an unknown tag (``!vault``, ``!unsafe``...) as None.

        Such values are secrets or raw strings, never the static paths the closure follows.
        """

    _OpaqueTagLoader.add_constructor(None, lambda loader, node: None)

PROVISION_EXTENSIONS = ('.yml', '.yaml', '.pp', '.sh')
PLAYBOOK_EXTENSIONS = ('.yml', '.yaml')
MODES = ('closure', 'file')

_IGNORED_DIRECTORIES = frozenset(('__pycache__', '.git', '.hg', '.svn'))
_IGNORED_SUFFIXES = ('.pyc', '.pyo')
_ROLE_META_FILES = ('meta/main.yml', 'meta/main.yaml', 'meta/main')
_ROLE_TASK_DIRECTORIES = ('tasks', 'handlers')
_TASK_SECTIONS = ('pre_tasks', 'tasks', 'post_tasks', 'handlers')
_BLOCK_SECTIONS = ('block', 'rescue', 'always')
# A collection content reference: namespace.collection.name (the name may hold further dots).
_COLLECTION_REFERENCE = re.compile(r'[A-Za-z_]\w*\.[A-Za-z_]\w*\.[\w.]+')


def _action_names(*actions: str) -> tuple[str, ...]:
    return tuple(f'{prefix}{action}' for action in actions for prefix in ('', 'ansible.builtin.', 'ansible.legacy.'))


_IMPORT_PLAYBOOK = _action_names('import_playbook')
_INCLUDE_ROLE = _action_names('include_role', 'import_role')
_INCLUDE_TASKS = _action_names('include_tasks', 'import_tasks')


class ProvisionFileError(ValueError):
    """A provision file, or a file it pulls in, that cannot be hashed. ``path`` names it, and so does the message."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f'{path} {problem}')
        self.path = path


class Closure(NamedTuple):
    """What a provision file's hash covers.

    ``files`` maps each file to the name it is hashed under, sorted by name; ``unresolved`` describes
    each reference that was skipped, as ``'NAME-OF-REFERRING-FILE: what'``.
    """

    files: dict[Path, str]
    unresolved: list[str]


class ProvisionHashes(NamedTuple):
    """``hashes`` maps each declared path to its hash; ``unresolved`` each declared path with skipped references to them."""

    hashes: dict[str, str]
    unresolved: dict[str, list[str]]


class _Context(NamedTuple):
    """Where the references of a task list resolve: roles from the playbook's directory, task files from ``task_dirs``."""

    playbook_dir: Path
    task_dirs: tuple[Path, ...]


def closure_files(
    path: str | os.PathLike, roles_path: Iterable[str | os.PathLike] = (), hash_include: Iterable[str | os.PathLike] = (), mode: str = 'closure'
) -> Closure:
    """The files the hash of provision file ``path`` covers, and the references that were skipped.

    Relative paths are relative to the working directory. Raises ``ProvisionFileError`` for a
    missing file, a directory, an unknown extension or YAML that does not parse, and ``ValueError``
    for an unknown ``mode``.
    """
    if mode not in MODES:
        raise ValueError(f'unknown hash mode {mode!r}; expected one of {", ".join(MODES)}')
    provision_file = _absolute(path)
    _check_is_file(provision_file, str(path))
    if provision_file.suffix not in PROVISION_EXTENSIONS:
        raise ProvisionFileError(str(path), f'has an unknown extension; a provision file is one of {", ".join(PROVISION_EXTENSIONS)}')
    walker = _Walker(provision_file, str(path), roles_path)
    if mode == 'closure' and provision_file.suffix in PLAYBOOK_EXTENSIONS:
        walker.playbook(provision_file)
    else:
        walker.add_file(provision_file)
    for extra in hash_include:
        walker.add_included(_absolute(extra), str(extra))
    return Closure(dict(sorted(walker.files.items(), key=lambda item: item[1])), walker.unresolved)


def closure_hash(
    path: str | os.PathLike, roles_path: Iterable[str | os.PathLike] = (), hash_include: Iterable[str | os.PathLike] = (), mode: str = 'closure'
) -> str:
    """The hash recorded for provision file ``path``: 12 hex digits over its closure; raises as ``closure_files``."""
    return _digest(closure_files(path, roles_path, hash_include, mode).files)


def provision_hashes(
    files: Sequence[str],
    base_dir: str | os.PathLike,
    roles_path: Iterable[str | os.PathLike] = (),
    hash_include: Iterable[str | os.PathLike] = (),
    mode: str = 'closure',
) -> ProvisionHashes:
    """The hash of each declared provision file, keyed as declared; relative paths are relative to ``base_dir``.

    Raises as ``closure_files``; the error names the file below ``base_dir``.
    """
    base = Path(base_dir)
    roles = [base / directory for directory in roles_path]
    extras = [base / extra for extra in hash_include]
    hashes, unresolved = {}, {}
    for declared in files:
        closure = closure_files(base / declared, roles, extras, mode)
        hashes[declared] = _digest(closure.files)
        if closure.unresolved:
            unresolved[declared] = closure.unresolved
    return ProvisionHashes(hashes, unresolved)


class _Walker:
    """Collects a closure: ``files`` (path -> hashed name) and ``unresolved``, following references once each."""

    def __init__(self, provision_file: Path, display_name: str, roles_path: Iterable[str | os.PathLike]) -> None:
        self.files: dict[Path, str] = {}
        self.unresolved: list[str] = []
        self._provision_file = provision_file
        self._base_dir = provision_file.parent
        self._display_name = display_name
        self._roles_path = tuple(_absolute(directory) for directory in roles_path)
        self._visited: set[tuple] = set()

    def add_file(self, path: Path) -> None:
        # A file inside a role keeps its role name even when also reached by path (see _role).
        self.files.setdefault(path, Path(os.path.relpath(path, self._base_dir)).as_posix())

    def add_included(self, path: Path, display_name: str) -> None:
        """Add a ``hash_include`` path: a file, or every file below a directory."""
        if path.is_dir():
            for file in _directory_files(path):
                self.add_file(file)
        elif path.is_file():
            self.add_file(path)
        else:
            raise ProvisionFileError(display_name, '(in hash_include) does not exist')

    def playbook(self, path: Path) -> None:
        if not self._first_visit('playbook', path):
            return
        self.add_file(path)
        context = _Context(path.parent, (path.parent,))
        for play in _mappings(self._load(path)):
            target = _action_argument(play, _IMPORT_PLAYBOOK)
            if target is not None:
                self._follow_file(target, 'import_playbook', path, (path.parent,), self.playbook, collection_content=True)
                continue
            for role in _as_list(play.get('roles')):
                self._role(_role_name(role), path, context)
            for vars_file in _as_list(play.get('vars_files')):
                if isinstance(vars_file, list):
                    for candidate in vars_file:
                        self._follow_file(candidate, 'vars_files', path, (path.parent,), self.add_file, optional=True)
                else:
                    self._follow_file(vars_file, 'vars_files', path, (path.parent,), self.add_file)
            for section in _TASK_SECTIONS:
                self._tasks(play.get(section), path, context)

    def _tasks_file(self, path: Path, context: _Context) -> None:
        if not self._first_visit('tasks', path, context):
            return
        self.add_file(path)
        self._tasks(self._load(path), path, context)

    def _tasks(self, tasks: object, source: Path, context: _Context) -> None:
        for task in _mappings(tasks):
            for section in _BLOCK_SECTIONS:
                self._tasks(task.get(section), source, context)
            role_arguments = _action_argument(task, _INCLUDE_ROLE)
            if role_arguments is not None:
                if isinstance(role_arguments, Mapping):
                    self._role(role_arguments.get('name'), source, context)
                else:
                    self._unresolved(source, f'include_role/import_role {role_arguments!r} (free-form arguments; use name:)')
            tasks_arguments = _action_argument(task, _INCLUDE_TASKS)
            if tasks_arguments is not None:
                target = tasks_arguments.get('file', tasks_arguments.get('_raw_params')) if isinstance(tasks_arguments, Mapping) else tasks_arguments
                search_dirs = tuple(dict.fromkeys((source.parent, *context.task_dirs)))
                self._follow_file(target, 'include_tasks/import_tasks', source, search_dirs, lambda found: self._tasks_file(found, context))

    def _role(self, name: object, source: Path, context: _Context, depending_role: Path | None = None) -> None:
        if not self._static(name, 'role', source):
            return
        search_dirs = [context.playbook_dir / 'roles', *self._roles_path]
        if depending_role is not None:
            search_dirs.append(depending_role.parent)
        search_dirs.append(context.playbook_dir)
        role_dir = next((_absolute(directory / name) for directory in search_dirs if (directory / name).is_dir()), None)
        if role_dir is None:
            if not _COLLECTION_REFERENCE.fullmatch(name):
                self._unresolved(source, f'role {name!r} (not found)')
            return
        if not self._first_visit('role', role_dir, context.playbook_dir):
            return
        for file in _directory_files(role_dir):
            self.files[file] = f'roles/{role_dir.name}/{file.relative_to(role_dir).as_posix()}'
        role_context = _Context(context.playbook_dir, (role_dir / 'tasks', role_dir))
        meta_file = next((role_dir / meta for meta in _ROLE_META_FILES if (role_dir / meta).is_file()), None)
        if meta_file is not None:
            meta = self._load(meta_file)
            for dependency in _as_list(meta.get('dependencies') if isinstance(meta, Mapping) else None):
                self._role(_role_name(dependency), meta_file, context, role_dir)
        for directory in _ROLE_TASK_DIRECTORIES:
            if (role_dir / directory).is_dir():
                for file in _directory_files(role_dir / directory):
                    if file.suffix in PLAYBOOK_EXTENSIONS:
                        self._tasks(self._load(file), file, role_context)

    def _follow_file(
        self,
        reference: object,
        kind: str,
        source: Path,
        search_dirs: Sequence[Path],
        follow: Callable[[Path], None],
        optional: bool = False,
        collection_content: bool = False,
    ) -> None:
        """Call ``follow`` with the first file ``reference`` names in ``search_dirs``, or report it unresolved."""
        if not self._static(reference, kind, source):
            return
        found = next((_absolute(directory / reference) for directory in search_dirs if (directory / reference).is_file()), None)
        if found is not None:
            follow(found)
        elif not optional and not (collection_content and _COLLECTION_REFERENCE.fullmatch(reference)):
            self._unresolved(source, f'{kind} {reference!r} (not found)')

    def _static(self, reference: object, kind: str, source: Path) -> TypeGuard[str]:
        """Whether ``reference`` is a path or name known before the play runs; a templated one is reported."""
        if isinstance(reference, str) and ('{{' in reference or '{%' in reference):
            self._unresolved(source, f'{kind} {reference!r} (templated)')
            return False
        return isinstance(reference, str) and bool(reference)

    def _unresolved(self, source: Path, what: str) -> None:
        self.unresolved.append(f'{self._name(source)}: {what}')

    def _first_visit(self, kind: str, path: Path, *context: object) -> bool:
        # Keyed by the real path, so an import cycle through a symlink ends too.
        key = (kind, path.resolve(), *context)
        if key in self._visited:
            return False
        self._visited.add(key)
        return True

    def _load(self, path: Path) -> object:
        if not HAS_YAML:
            raise ProvisionFileError(self._describe(path), f'cannot be parsed: PyYAML is not installed\n{YAML_IMPORT_ERROR}')
        try:
            return yaml.load(_read(path, self._describe(path)), Loader=_OpaqueTagLoader)  # a SafeLoader: no object construction
        except yaml.YAMLError as exc:
            raise ProvisionFileError(self._describe(path), f'is not valid YAML: {exc}') from exc

    def _name(self, path: Path) -> str:
        return self.files.get(path) or Path(os.path.relpath(path, self._base_dir)).as_posix()

    def _describe(self, path: Path) -> str:
        if path == self._provision_file:
            return self._display_name
        return f'{path} (pulled in by {self._display_name})'


def _digest(files: Mapping[Path, str]) -> str:
    if len(files) == 1:
        (path,) = files
        return short_hash(_read(path, str(path)))
    pairs = sorted((name, hashlib.sha256(_read(path, str(path))).hexdigest()) for path, name in files.items())
    return short_hash(json.dumps(pairs).encode('utf-8'))


def _directory_files(directory: Path) -> Iterator[Path]:
    """Every file below ``directory`` in sorted order, following symbolic links once, skipping caches and VCS data."""
    seen = set()
    for root, dirs, names in os.walk(directory, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(name for name in dirs if name not in _IGNORED_DIRECTORIES)
        yield from (Path(root, name) for name in sorted(names) if not name.endswith(_IGNORED_SUFFIXES))


def _check_is_file(path: Path, display_name: str) -> None:
    if path.is_dir():
        raise ProvisionFileError(display_name, 'is a directory, not a file')
    if not path.is_file():
        raise ProvisionFileError(display_name, 'does not exist')


def _read(path: Path, display_name: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ProvisionFileError(display_name, f'cannot be read: {exc.strerror}') from exc


def _absolute(path: str | os.PathLike) -> Path:
    # Lexically normalized, symbolic links kept: names stay what the user sees.
    return Path(os.path.abspath(path))


def _mappings(value: object) -> Iterator[Mapping]:
    return (item for item in _as_list(value) if isinstance(item, Mapping))


def _as_list(value: object) -> list:
    return value if isinstance(value, list) else []


def _role_name(entry: object) -> object:
    """The role a ``roles:`` or ``dependencies:`` entry names: a string, or ``role:``/``name:`` of a mapping."""
    return entry.get('role', entry.get('name')) if isinstance(entry, Mapping) else entry


def _action_argument(task: Mapping, actions: Sequence[str]) -> object:
    return next((task[action] for action in actions if action in task), None)
