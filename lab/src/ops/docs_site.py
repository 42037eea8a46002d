"""MkDocs hook of the documentation site (`make docs`): the pages' generated parts.

Markers are replaced when a page is built, so the site cannot retype what the code holds:
- `<!-- make-help -->`: the make targets, from `make help` itself;
- `<!-- constant chaos.mutation.BUDGET -->`: the value of a module-level constant, read from its
  source (a number, a string, or arithmetic over the module's other constants); a name that is gone
  or not such a constant fails the build;
- `<!-- api-errors -->`: every error status and code the published OpenAPI document (the
  `openapi.json` beside the service's declaration, written by `make openapi` from its route list,
  `OPENAPI`) says an answer may carry, with the operations that may get it and what it means (the
  library's codes here, in `ERROR_MEANINGS`; the service's own in its proof's,
  `service_meanings`). A code the document has and neither explains, or the other way round,
  fails the build.

Standard library only: MkDocs loads this file in .venv-docs, which has none of the project's packages.
"""

from __future__ import annotations

import ast
import json
import operator
import os
import re
import subprocess
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The project whose site this builds: mkdocs runs in its root (the Makefile's `docs`), and loads
# this hook by its path, with no package of the lab importable.
ROOT = Path.cwd()
PYPROJECT = ROOT / "pyproject.toml"
MAKE_HELP = "<!-- make-help -->"
API_ERRORS = "<!-- api-errors -->"
# Where the site serves mermaid.js (mkdocs.yml's extra_javascript names it).
MERMAID_PAGE_PATH = "javascripts/mermaid.min.js"

# What each of the library's error codes means to a client; the service's own codes are its proof's
# `ERROR_MEANINGS` (`meanings()`). The statuses and operations come from the document, the limits
# from the code (the table is filled in before the page's constants).
ERROR_MEANINGS: dict[str, str] = {
    "IdempotencyKeyMissing": "no `Idempotency-Key` header, or an empty one",
    "IdempotencyKeyInvalid": (
        "a key outside the rules (1-<!-- constant reliability.http.MAX_KEY_CHARS --> printable ASCII, "
        "a Structured Field string or bare), "
        "or two header lines carrying different keys"
    ),
    "MalformedBody": (
        "the body is empty, not UTF-8, not JSON, nested too deep, holds a number too long to parse, "
        "or is over <!-- constant orders.contract.MAX_BODY_BYTES --> bytes"
    ),
    # A code that means one thing per status is explained per "<status> <code>".
    "400 InvalidRequest": "API Gateway's body model refused the body (before the function ran)",
    "422 InvalidRequest": "JSON outside the contract (the field is named, the input never echoed)",
    "RequestRefused": "any other refusal of API Gateway's (its DEFAULT_4XX)",
    "Unauthorized": "IAM (SigV4) authorization refused",
    "MissingAuthenticationToken": (
        "an unsigned request on an IAM stage, a path outside the stage, or a method API Gateway "
        "cannot route (TRACE, CONNECT, ...)"
    ),
    "AccessDenied": "the signed caller may not invoke the API",
    "InvalidSignature": "the SigV4 signature does not match",
    "ExpiredToken": "the caller's credentials expired",
    "NotFound": "no route has this path",
    "MethodNotAllowed": "a known path with another routed method (`Allow` names the path's)",
    "RequestInProgress": "the first request with this key is still running (`Retry-After`)",
    "RequestTooLarge": "over API Gateway's 10 MiB",
    "UnsupportedMediaType": "a POST body not sent as `application/json`",
    "IdempotencyKeyReused": "the key was used with another body (also after its record expired)",
    "TooManyRequests": "the stage's throttle (`Retry-After: 1`)",
    "InternalError": "a bug: retry with the same key",
    "GatewayError": "API Gateway's DEFAULT_5XX",
    "GatewayTimeout": "the function timed out",
    "ServiceUnavailable": (
        "DynamoDB or SQS throttled, failed or timed out (`Retry-After`; retry with the same key)"
    ),
}

# Where a dotted module name may live: the repository root, the functions' root, the libraries' src.
MODULE_ROOTS = (ROOT, ROOT / "functions", *sorted((ROOT / "lib").glob("*/src")), ROOT / "lab" / "src")
# A marker written in a code span (`<!-- constant ... -->`) is the marker shown, not replaced.
CONSTANT = re.compile(r"(?<!`)<!-- constant ([\w.]+) -->(?!`)")
_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_HELP_LINE = re.compile(r"^\s+(\S+)\s+(.*)$")


def make_targets_table(help_text: str) -> str:
    """`make help`'s lines as a Markdown table."""
    rows = ["| target | what it does |", "| --- | --- |"]
    for line in _ANSI.sub("", help_text).splitlines():
        match = _HELP_LINE.match(line)
        if match:
            target, text = match.groups()
            rows.append(f"| `{target}` | {text.replace('|', '&#124;')} |")
    if len(rows) == 2:
        raise ValueError("`make help` listed no target")
    return "\n".join(rows)


def make_help(root: Path = ROOT) -> str:
    return subprocess.run(
        ["make", "--no-print-directory", "-s", "help"],  # noqa: S607 - make, as the reader runs it
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _module_source(module: str, roots: tuple[Path, ...]) -> Path:
    parts = module.split(".")
    for root in roots:
        for candidate in (root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
    raise ValueError(f"no module {module} under {[str(r) for r in roots]}")


def declaration_source(pyproject: Path = PYPROJECT, roots: tuple[Path, ...] = MODULE_ROOTS) -> Path:
    """The source of the service's declaration: the module `[tool.retrysafe] service` names."""
    settings = tomllib.loads(pyproject.read_text()).get("tool", {}).get("retrysafe", {})
    return _module_source(str(settings["service"]).partition(":")[0], roots)


def openapi_source(pyproject: Path = PYPROJECT, roots: tuple[Path, ...] = MODULE_ROOTS) -> Path:
    """The service's published OpenAPI document: `openapi.json` beside its declaration (found as
    `ops.service.openapi_path` finds it, without importing the service)."""
    return declaration_source(pyproject, roots).with_name("openapi.json")


OPENAPI = openapi_source()


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            found[node.target.id] = node.value
    return found


def constant_value(dotted: str, roots: tuple[Path, ...] = MODULE_ROOTS) -> object:
    """The value of `module.NAME`, a module-level constant, read (never imported) from its source."""
    module, _, name = dotted.rpartition(".")
    source = _module_source(module, roots)
    values = _assignments(ast.parse(source.read_text(), str(source)))

    def evaluate(node: ast.expr) -> object:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str):
            return node.value
        if isinstance(node, ast.Name) and node.id in values:
            return evaluate(values[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](evaluate(node.left), evaluate(node.right))
        raise ValueError(f"{dotted} is not a constant the docs can read: {ast.unparse(node)}")

    if name not in values:
        raise ValueError(f"{dotted}: no module-level {name} in {source.relative_to(ROOT)}")
    return evaluate(values[name])


def _shown(value: object) -> str:
    return f"{value:,}" if isinstance(value, int | float) else str(value)


def fill_constants(markdown: str, roots: tuple[Path, ...] = MODULE_ROOTS) -> str:
    filled = CONSTANT.sub(lambda match: _shown(constant_value(match[1], roots)), markdown)
    # A marker the pattern missed would render as an invisible HTML comment: a hole in the page.
    if left := re.search(r"(?<!`)<!-- constant[^>]*-->", filled):
        raise ValueError(
            f"a constant marker not filled (written `<!-- constant module.NAME -->`?): {left[0]}"
        )
    return filled


def _codes_of(response: Mapping[str, Any]) -> list[str]:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return list(schema.get("properties", {}).get("error", {}).get("enum", []))


def error_codes(document: Mapping[str, Any]) -> dict[tuple[int, str], list[str]]:
    """(status, code) -> the operations whose answers may carry it, as the document says."""
    found: dict[tuple[int, str], list[str]] = {}
    operations: list[tuple[str, Mapping[str, Any]]] = [
        (f"{method.upper()} {path}", operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]
    operations.append(("any other request", document["x-retrysafe-unmatched-requests"]))
    for name, operation in operations:
        for status, response in operation["responses"].items():
            for code in _codes_of(response):
                names = found.setdefault((int(status), code), [])
                if name not in names:
                    names.append(name)
    return dict(sorted(found.items()))


def service_meanings(roots: tuple[Path, ...] = MODULE_ROOTS) -> dict[str, str]:
    """The service's own codes' meanings: the literal `ERROR_MEANINGS` of its proof's `docs` module
    (the sample's proof/docs.py), read, never imported, like the constants: the service is the
    one pyproject.toml's `[tool.retrysafe] service` names, its proof package the `proof=` its
    `Service(...)` is given. No proof, or no such module: none of its own."""
    declaration = declaration_source(roots=roots)
    package = next(
        (
            keyword.value.value
            for node in ast.walk(ast.parse(declaration.read_text(), str(declaration)))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Service"
            for keyword in node.keywords
            if keyword.arg == "proof" and isinstance(keyword.value, ast.Constant)
        ),
        None,
    )
    try:
        source = _module_source(f"{package}.docs", roots) if isinstance(package, str) else None
    except ValueError:
        return {}
    if source is None:
        return {}
    found = _assignments(ast.parse(source.read_text(), str(source))).get("ERROR_MEANINGS")
    return dict(ast.literal_eval(found)) if found is not None else {}


def errors_table(document: Mapping[str, Any], meanings: Mapping[str, str] | None = None) -> str:
    if meanings is None:
        meanings = {**ERROR_MEANINGS, **service_meanings()}
    found = error_codes(document)
    every = {name for names in found.values() for name in names}
    used: set[str] = set()
    rows = ["| status | code | who may get it | when |", "| ---: | --- | --- | --- |"]
    for (status, code), operations in found.items():
        key = f"{status} {code}" if f"{status} {code}" in meanings else code
        if key not in meanings:
            raise ValueError(f"{status} {code} is in the OpenAPI document, not in ops.docs_site")
        used.add(key)
        who = "every request" if set(operations) == every else ", ".join(f"`{o}`" for o in operations)
        rows.append(f"| {status} | `{code}` | {who} | {meanings[key]} |")
    if stale := sorted(meanings.keys() - used):
        raise ValueError(f"ops.docs_site explains codes the OpenAPI document no longer has: {stale}")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs event: fill in the generated parts of a page."""
    if MAKE_HELP in markdown:
        markdown = markdown.replace(MAKE_HELP, make_targets_table(make_help()))
    if API_ERRORS in markdown:
        markdown = markdown.replace(API_ERRORS, errors_table(json.loads(OPENAPI.read_text())))
    return fill_constants(markdown)


def on_files(files: Any, config: Any) -> Any:
    """MkDocs event: publish the OpenAPI document beside the pages, for the API page's Swagger UI,
    and mermaid.js (`make docs` fetches the pinned one, `MERMAID_JS`), so diagrams draw offline."""
    from mkdocs.structure.files import File  # noqa: PLC0415 - MkDocs' own venv, only at build time

    mermaid = Path(os.environ.get("MERMAID_JS", ""))
    if not mermaid.is_file():
        raise FileNotFoundError(f"no mermaid.js at MERMAID_JS={mermaid}: build the site with `make docs`")
    files.append(File.generated(config, "openapi.json", abs_src_path=str(OPENAPI)))
    files.append(File.generated(config, MERMAID_PAGE_PATH, abs_src_path=str(mermaid.resolve())))
    return files
