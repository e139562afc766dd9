"""Template files: the loader that reads only regular files inside a template folder
(no symbolic link, no ``..``, no absolute name, no device, nothing on another file
system such as ``/proc``), and the check that an override folder is the workspace's own."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import BaseLoader, TemplateNotFound
from jinja2.sandbox import SecurityError

#: The largest template file read (the built-in ones are a few KB).
MAX_TEMPLATE_BYTES = 1_000_000
#: Folders whose files are not files (kernel and device views).
_SYSTEM_ROOTS = ("/proc", "/sys", "/dev")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class TemplateFileRefused(SecurityError):
    """A template name or file the loader will not read (not a missing template: the
    override that names it is refused as a whole, never silently replaced)."""


def template_pieces(name: str) -> list[str]:
    """The folder-relative parts of a template name; a name that is absolute, climbs
    with ``..`` or holds a backslash or NUL is refused."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name or ":" in name[:2]:
        raise TemplateFileRefused(f"template name {name!r} is not a path inside the folder")
    pieces = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in pieces:
        raise TemplateFileRefused(f"template name {name!r} climbs out of its folder with '..'")
    if not pieces:
        raise TemplateNotFound(name)
    return pieces


def _under_system_root(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in _SYSTEM_ROOTS)


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` may not hold templates: a symbolic link anywhere in its path, not
    a folder, or under ``/proc``, ``/sys``, ``/dev``. ``None``: it is fine (or absent)."""
    absolute = os.path.abspath(folder)
    try:
        st = os.lstat(absolute)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder"
    if os.path.realpath(absolute) != absolute:
        return "is reached through a symbolic link"
    if _under_system_root(absolute):
        return "is a system folder"
    return None


def _read_regular(dfd: int, piece: str, name: str, device: int) -> tuple[str, tuple[int, ...]]:
    """The text of the regular file ``piece`` in the open folder ``dfd``, and its stamp."""
    try:
        fd = os.open(piece, _FILE_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        raise TemplateNotFound(name) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TemplateFileRefused(f"template {name} is a symbolic link") from None
        raise TemplateFileRefused(f"template {name} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TemplateFileRefused(f"template {name} is not a regular file")
        if st.st_dev != device:
            raise TemplateFileRefused(f"template {name} is on another file system")
        if st.st_size > MAX_TEMPLATE_BYTES:
            raise TemplateFileRefused(
                f"template {name} is larger than {MAX_TEMPLATE_BYTES:,} bytes"
            )
        data = os.read(fd, MAX_TEMPLATE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_TEMPLATE_BYTES:
        raise TemplateFileRefused(f"template {name} is larger than {MAX_TEMPLATE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateFileRefused(f"template {name} is not UTF-8 ({exc.reason})") from None
    return text, (st.st_ino, st.st_mtime_ns, st.st_size)


def read_template(folder: Path, name: str) -> tuple[str, str, tuple[int, ...]]:
    """``name`` read from ``folder``, each step opened without following a link:
    ``(text, path, stamp)``. Missing: ``TemplateNotFound``; anything but a regular file
    inside the folder: ``TemplateFileRefused``."""
    pieces = template_pieces(name)
    try:
        dfd = os.open(folder, _DIR_FLAGS)
    except FileNotFoundError:
        raise TemplateNotFound(name) from None
    except OSError as exc:
        raise TemplateFileRefused(
            f"template folder {folder} cannot be opened ({exc.strerror})"
        ) from None
    try:
        device = os.fstat(dfd).st_dev
        for piece in pieces[:-1]:
            try:
                inner = os.open(piece, _DIR_FLAGS, dir_fd=dfd)
            except FileNotFoundError:
                raise TemplateNotFound(name) from None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise TemplateFileRefused(
                        f"template {name}: {piece!r} is a symbolic link or not a folder"
                    ) from None
                raise TemplateFileRefused(
                    f"template {name} cannot be read ({exc.strerror})"
                ) from None
            os.close(dfd)
            dfd = inner
            if os.fstat(dfd).st_dev != device:
                raise TemplateFileRefused(f"template {name} is on another file system")
        text, stamp = _read_regular(dfd, pieces[-1], name, device)
    finally:
        os.close(dfd)
    return text, os.path.join(folder, *pieces), stamp


def _file_stamp(path: str) -> tuple[int, ...] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class TemplateFolderLoader(BaseLoader):
    """Templates read from one folder, regular files inside it only (see
    :func:`read_template`). A missing name lets a ``ChoiceLoader`` try the next folder;
    a refused one stops the render."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(os.path.abspath(folder))

    def get_source(self, environment: Any, template: str) -> tuple[str, str, Callable[[], bool]]:
        text, path, stamp = read_template(self.folder, template)
        return text, path, lambda: _file_stamp(path) == stamp
