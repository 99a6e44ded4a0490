"""Files on disk: atomic writes, safe replacement of folders, and tensors as safetensors +
everything else as JSON.

Nothing here pickles or executes anything it reads: a model folder or checkpoint is data.

Outputs never destroy what dpforge did not write (design rule 5). Every output path is checked
before a run starts (:func:`check_output_file`, :func:`check_output_folder`): never the current
folder, a folder above it, an input or a folder holding one; an existing folder is replaced
only when its owner predicate recognises it as a dpforge output (``--overwrite`` alone is not
enough). A folder is replaced in steps that a kill at any moment cannot break
(:func:`replace_folder`): the new one is built under a hidden ``.NAME.dpforge-tmp-*`` name,
renamed ``.NAME.dpforge-new-*`` once complete, the old one renamed ``.NAME.dpforge-old-*``,
the new one renamed in, the old one removed. The next run (or :func:`recover_folder`) finishes
or undoes whatever a kill interrupted, so the old or the new folder is always there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpforge.errors import ModelFileError, OutputExistsError

PRIVATE_MODE = 0o600  # owner only: files that hold values computed from the private records

if TYPE_CHECKING:  # torch and safetensors load with the tensor functions: a federated site's
    import torch  # per-answer process writes only JSON


def atomic_write(
    path: Path,
    write: Callable[[Path], None],
    *,
    overwrite: bool,
    durable: bool = False,
    private: bool = False,
) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it into place.

    An interrupted or failed write leaves no partial ``path`` behind. ``durable`` also flushes
    the file and its folder to disk before returning (for records that must survive a crash).
    ``private`` keeps the file at mode 0600 (owner only, whatever the umask): checkpoints and
    the budget file hold the exact record count and the records' fingerprint.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise OutputExistsError(f"{path} already exists; choose another name or pass --overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.chmod(tmp, PRIVATE_MODE if private else 0o666 & ~_umask())  # mkstemp makes 0600
        if durable:
            _fsync(tmp)
        os.replace(tmp, path)
        if durable:
            _fsync(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """The process's file-creation mask (read by setting it, then restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json(
    path: Path,
    payload: dict[str, Any],
    *,
    overwrite: bool = True,
    durable: bool = False,
    private: bool = False,
) -> None:
    """Write ``payload`` as JSON atomically (``private``: mode 0600, see :func:`atomic_write`)."""
    text = json.dumps(payload, indent=2)
    write = lambda p: p.write_text(text)  # noqa: E731
    atomic_write(path, write, overwrite=overwrite, durable=durable, private=private)


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ModelFileError(f"{path} is missing: this is not a complete dpforge folder") from None
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None


def write_tensors(
    path: Path,
    tensors: dict[str, torch.Tensor],
    *,
    overwrite: bool = True,
    metadata: dict[str, str] | None = None,
    private: bool = False,
) -> None:
    """Write ``tensors`` (and text ``metadata`` in the same file) atomically as safetensors
    (``private``: mode 0600, see :func:`atomic_write`)."""
    from safetensors.torch import save_file

    cpu = {k: v.detach().to("cpu").contiguous() for k, v in tensors.items()}
    write = lambda p: save_file(cpu, str(p), metadata=metadata)  # noqa: E731
    atomic_write(path, write, overwrite=overwrite, private=private)


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not Path(path).is_file():
        raise ModelFileError(f"{path} is missing: this is not a complete dpforge folder")
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise ModelFileError(f"{path} is not a valid safetensors file: {exc}") from None


def read_tensor_metadata(path: Path) -> dict[str, str]:
    """The text metadata stored with the tensors of a safetensors file ({} if none)."""
    if not Path(path).is_file():
        raise ModelFileError(f"{path} is missing: this is not a complete dpforge folder")
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            return dict(handle.metadata() or {})
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise ModelFileError(f"{path} is not a valid safetensors file: {exc}") from None


def flatten_state(prefix: str, state: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Move every tensor of a nested state (e.g. an optimizer's) into ``tensors``.

    Returns the JSON-safe skeleton, where each tensor is replaced by {"tensor": key}.
    """
    import torch

    if isinstance(state, torch.Tensor):
        tensors[prefix] = state
        return {"tensor": prefix}
    if isinstance(state, dict):
        return {"dict": [[k, flatten_state(f"{prefix}.{k}", v, tensors)] for k, v in state.items()]}
    if isinstance(state, list | tuple):
        return {"list": [flatten_state(f"{prefix}.{i}", v, tensors) for i, v in enumerate(state)]}
    if state is None or isinstance(state, bool | int | float | str):
        return {"value": state}
    raise TypeError(f"cannot store {type(state).__name__} at {prefix}")


def unflatten_state(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of :func:`flatten_state`."""
    if "tensor" in skeleton:
        return tensors[skeleton["tensor"]]
    if "dict" in skeleton:
        return {k: unflatten_state(v, tensors) for k, v in skeleton["dict"]}
    if "list" in skeleton:
        return [unflatten_state(v, tensors) for v in skeleton["list"]]
    return skeleton["value"]


# -- output paths -------------------------------------------------------------------------------
def _resolved(path: Path) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def refuse_unsafe_output(path: Path, inputs: tuple[Path, ...] = (), what: str = "output") -> None:
    """Refuse an output path that would replace the current folder, a folder above it, the
    file system root or home folder, an input, or a folder that holds an input."""
    target = _resolved(path)
    cwd = _resolved(Path.cwd())
    protected = {cwd, *cwd.parents, _resolved(Path.home()), Path(target.anchor)}
    if target in protected:
        raise OutputExistsError(
            f"{what} {path} is the current folder or a folder above it: dpforge never replaces "
            "it; give a new folder name, e.g. --out my-model"
        )
    for source in inputs:
        held = _resolved(source)
        if target == held or target in held.parents:
            raise OutputExistsError(
                f"{what} {path} is or holds the input {source}: dpforge never replaces its "
                "inputs; choose another output name"
            )


def check_output_file(
    path: Path, *, overwrite: bool, inputs: tuple[Path, ...] = (), what: str = "output"
) -> None:
    """Before any work: ``path`` may be written as a file (absent, or a file with overwrite).

    Temporary files that a killed write of ``path`` left beside it are removed.
    """
    refuse_unsafe_output(path, inputs, what)
    path = Path(path)
    remove_stale_temp_files(path.parent, (path.name,))
    if path.is_dir():
        raise OutputExistsError(f"{what} {path} is a folder; give a file name")
    if (path.exists() or path.is_symlink()) and not overwrite:
        raise OutputExistsError(f"{path} already exists; choose another name or pass --overwrite")


@dataclass(frozen=True)
class FolderKind:
    """A kind of folder dpforge writes: the entries it may hold, and how to recognise a
    complete one (e.g. a model.json with the dpforge-model format marker)."""

    what: str
    names: frozenset[str]
    complete: Callable[[Path], bool]

    def ours(self, path: Path) -> bool:
        """Only dpforge's entries (complete or not): safe to delete as a leftover."""
        return folder_holds_only(path, self.names)

    def owned(self, path: Path) -> bool:
        """A complete folder of this kind holding nothing else: safe to replace."""
        return self.ours(path) and self.complete(path)


def check_output_folder(
    path: Path, kind: FolderKind, *, overwrite: bool, inputs: tuple[Path, ...] = ()
) -> None:
    """Before any work: ``path`` may be written as a folder of ``kind``: absent, or (with
    overwrite) a complete folder of that kind holding nothing else. Stale staging folders a
    kill left beside it are recovered or removed first."""
    refuse_unsafe_output(path, inputs, kind.what)
    path = Path(path)
    recover_folder(path, kind)
    if not (path.exists() or path.is_symlink()):
        return
    if not overwrite:
        raise OutputExistsError(f"{path} already exists; choose another folder or pass --overwrite")
    if path.is_symlink() or not path.is_dir():
        raise OutputExistsError(f"{kind.what} {path} exists and is not a folder; choose another")
    if not kind.owned(path):
        raise OutputExistsError(
            f"{path} is not a {kind.what} dpforge wrote (it holds other files): dpforge replaces "
            "only its own outputs; choose another name, or move the folder away yourself"
        )


def folder_holds_only(path: Path, names: set[str]) -> bool:
    """Whether the folder's entries are all among ``names`` (dpforge's own temporary files of
    those names count too)."""
    try:
        entries = os.listdir(path)
    except OSError:
        return False
    return all(entry in names or _temp_of(entry, names) for entry in entries)


def _temp_of(entry: str, names: set[str]) -> bool:
    """``.NAME.XXXX.tmp``: an :func:`atomic_write` temporary file of one of ``names``."""
    return any(entry.startswith(f".{n}.") and entry.endswith(".tmp") for n in names)


# -- replacing folders --------------------------------------------------------------------------
_STAGES = ("tmp", "new", "old")


def _stage(target: Path, tag: str) -> Path:
    return target.parent / f".{target.name}.dpforge-{tag}-{uuid.uuid4().hex[:12]}"


def _staged(target: Path) -> dict[str, list[Path]]:
    """dpforge's hidden siblings of ``target`` by stage, newest first (and the unmarked
    ``.NAME.XXXXXXXX`` staging folders older dpforge versions left)."""
    found: dict[str, list[Path]] = {tag: [] for tag in (*_STAGES, "legacy")}
    if not target.parent.is_dir():
        return found
    pattern = re.compile(
        rf"^\.{re.escape(target.name)}\.(?:dpforge-(tmp|new|old)-[0-9a-f]{{12}}|([a-z0-9_]{{8}}))$"
    )
    for entry in target.parent.iterdir():
        match = pattern.match(entry.name)
        if match and entry.is_dir() and not entry.is_symlink():
            found[match.group(1) or "legacy"].append(entry)
    for paths in found.values():
        paths.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
    return found


def recover_folder(target: Path, kind: FolderKind) -> None:
    """Finish or undo a replacement a kill interrupted, and remove dpforge's leftovers.

    If ``target`` is missing, a complete new folder is renamed in, or else the complete old one
    is put back. Staging folders are removed only when they hold dpforge's entries alone.
    """
    target = Path(target)
    staged = _staged(target)
    if not (target.exists() or target.is_symlink()):
        for candidate in staged["new"] + staged["old"]:
            if kind.owned(candidate):
                os.rename(candidate, target)
                staged = _staged(target)
                break
    for paths in staged.values():
        for leftover in paths:
            if kind.ours(leftover):
                shutil.rmtree(leftover, ignore_errors=True)


def replace_folder(
    target: Path, build: Callable[[Path], None], kind: FolderKind, *, overwrite: bool
) -> Path:
    """Build a folder with ``build(staging)`` and put it at ``target`` so that a kill at any
    moment leaves the old or the new folder (see the module notes); returns ``target``.

    An existing ``target`` is replaced only with ``overwrite`` and when ``kind.owned`` it.
    """
    target = Path(target)
    check_output_folder(target, kind, overwrite=overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _stage(target, "tmp")
    os.mkdir(tmp)  # not mkdtemp: the finished folder keeps the user's umask, not mode 0700
    try:
        build(tmp)
        new = _stage(target, "new")
        os.rename(tmp, new)  # complete from here on: recover_folder may rename it in
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if not (target.exists() or target.is_symlink()):
        os.rename(new, target)
        return target
    old = _stage(target, "old")
    os.rename(target, old)
    os.rename(new, target)
    shutil.rmtree(old)
    return target


def remove_stale_temp_files(folder: Path, names: tuple[str, ...]) -> None:
    """Delete :func:`atomic_write` temporary files of ``names`` that a kill left in ``folder``.

    Call it only while no other process may be writing there (e.g. holding the folder's lock).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        if entry.is_file() and _temp_of(entry.name, set(names)):
            entry.unlink(missing_ok=True)
