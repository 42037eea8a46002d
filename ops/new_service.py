"""Start another service from this one: `python -m ops.new_service payments-api [--dest DIR]`.

`make new-service NAME=payments-api [DEST=dir]` copies every file git tracks into a new directory
(default: beside this project, named after the service), renames the service everywhere it is
spelled, runs `git init` and stages the files. The copy's `make test` passes as it is.

Why a script and not copier or cookiecutter: this repository is the reference service and the
template at once. A Jinja template needs `{{ placeholders }}` in the files, so the project would
stop being a service that runs and tests itself (or would need a second, drifting template tree),
and either tool would be a new dependency. The name is spelled in a handful of forms only, so a
rename over `git ls-files` is exact: each match of the old name, with or without separators, is
respelled in the same form (the table in `SPELLINGS`). A spelling in no known form stops the copy
with its file and line; `tests/unit/ops/test_new_service.py` runs the rename over the whole tree,
so a new odd spelling fails the tests, not a team's copy.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from infra.config import CONTEXT_KEY, ConfigError, load_config

ROOT = Path(__file__).resolve().parents[1]

# Files copied byte for byte: pictures, where the name (if drawn at all) is pixels no rename can
# reach; `make story ... FORMAT=png` draws them again for the new service. Any other file that is
# not UTF-8 text stops the copy, so nothing is carried over unrenamed by accident.
VERBATIM = ("docs/images/*.png",)


class NewServiceError(RuntimeError):
    """The copy cannot be made as asked; nothing has been written."""


def _service_context(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "cdk.json").read_text())["context"][CONTEXT_KEY])


def old_name(root: Path = ROOT) -> str:
    """The service name this project carries: `cdk.json`'s `<context key>.service`."""
    return str(_service_context(root)["service"])


def _words(name: str) -> list[str]:
    return name.split("-")


def _form(text: str, before: str, after: str) -> str | None:
    """Which spelling of a name `text` is, from its letters, separators and neighbours."""
    separators = set(re.sub(r"[A-Za-z0-9]", "", text))
    letters = text.replace(" ", "").replace("-", "").replace("_", "")
    if text.isupper() and separators <= {"_"}:
        return "constant"
    if text.islower() and separators <= {"_"} and ("_" in separators or "_" in before + after):
        return "snake"  # an identifier: retrysafe_telemetry_keys
    if text.islower() and separators <= {"-"}:
        return "kebab"
    if separators == {" "} and all(word[:1].isupper() for word in text.split(" ")):
        return "title"
    if not separators and letters[:1].isupper():
        return "pascal"
    return None


# How the new name is written in each form the old one was found in.
SPELLINGS: dict[str, Callable[[list[str]], str]] = {
    "kebab": "-".join,  # cdk.json service, stack, table, queue, function and alarm names
    "snake": "_".join,  # Python identifiers
    "constant": lambda words: "_".join(words).upper(),  # environment variables (RETRYSAFE_STAGE)
    "title": lambda words: " ".join(word.capitalize() for word in words),
    "pascal": lambda words: "".join(word.capitalize() for word in words),
}


def spelling_pattern(name: str) -> re.Pattern[str]:
    """Every way of writing `name`: its letters in order, case-insensitive, one optional
    separator (space, `-`, `_`, `.`) between any two of them."""
    letters = [re.escape(c) for c in name.replace("-", "")]
    return re.compile(r"[ ._-]?".join(letters), re.IGNORECASE)


@dataclass(frozen=True)
class Rename:
    old: str
    new: str

    def __post_init__(self) -> None:
        if spelling_pattern(self.old).search(self.new) or spelling_pattern(self.new).search(self.old):
            raise NewServiceError(f"{self.new!r} and {self.old!r} must not contain each other")

    def text(self, content: str, where: str) -> str:
        """`content` with every spelling of the old name respelled; NewServiceError on an unknown one."""
        words = _words(self.new)

        def respell(match: re.Match[str]) -> str:
            start, end = match.span()
            form = _form(match.group(0), content[start - 1 : start], content[end : end + 1])
            if form is None:
                line = content.count("\n", 0, start) + 1
                raise NewServiceError(
                    f"{where}:{line}: {match.group(0)!r} is a spelling of {self.old!r} in no known form "
                    f"({', '.join(SPELLINGS)}): write it in one of them"
                )
            return SPELLINGS[form](words)

        return spelling_pattern(self.old).sub(respell, content)


def tracked_files(root: Path) -> list[str]:
    """The files git tracks, as they are in the working tree (deleted ones left out)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z"],  # noqa: S607 - git from PATH, as a developer runs it
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [path for path in listing.split("\0") if path and (root / path).is_file()]


def _decoded(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def renamed_files(root: Path, rename: Rename) -> list[tuple[str, bytes, Path]]:
    """(new relative path, new content, source file) of every tracked file; all of them are renamed
    before any is written, so a refused copy leaves nothing behind."""
    result = []
    for path in tracked_files(root):
        data = (root / path).read_bytes()
        text = _decoded(data)
        if text is not None:
            data = rename.text(text, path).encode("utf-8")
        elif not any(fnmatch(path, pattern) for pattern in VERBATIM):
            raise NewServiceError(
                f"{path} is not UTF-8 text: add it to VERBATIM if it may be copied as it is"
            )
        result.append((rename.text(path, f"path {path}"), data, root / path))
    return result


def create(name: str, dest: Path, *, root: Path = ROOT) -> Path:
    """Write the renamed copy of `root` to `dest` (absent or empty), `git init` it and stage it."""
    if dest.exists() and any(dest.iterdir()):
        raise NewServiceError(f"{dest} exists and is not empty")
    try:  # the name rules synthesis applies (length, characters), before anything is written
        load_config({**_service_context(root), "service": name})
    except ConfigError as error:
        raise NewServiceError(str(error)) from error
    files = renamed_files(root, Rename(old=old_name(root), new=name))
    for relative, data, source in files:
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        shutil.copymode(source, target)  # keeps .ci/run executable
    # A longer name can push a line past the limit: let the formatter wrap it, so the copy's
    # `make lint` passes too.
    formatter = [sys.executable, "-m", "ruff", "format", "--quiet", "."]
    for command in (formatter, ["git", "init", "--quiet", "--initial-branch=main"], ["git", "add", "--all"]):
        subprocess.run(command, cwd=dest, check=True)  # noqa: S603 - fixed commands
    return dest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.new_service", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the new service's name, e.g. payments-api (as cdk.json's service)")
    parser.add_argument("--dest", type=Path, help="where to write it (default: ../<name>)")
    args = parser.parse_args(argv)
    dest = (args.dest or ROOT.parent / args.name).resolve()
    try:
        create(args.name, dest)
    except NewServiceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"{old_name()} copied to {dest} as {args.name}")
    print(f"next: cd {dest} && make test && git commit -m 'Start {args.name}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
