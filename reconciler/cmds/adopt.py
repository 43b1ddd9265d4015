"""``xce-adopt``: trust an existing folder as the root of a volume or a dataset cache.

The directory and dataset-copy providers trust only a root that holds the marker they
wrote there at its first create (docs/providers.md, "Root markers"), so an unmounted
volume's empty mount point is never taken for an empty volume. A folder they did not make
— a volume that existed before xce-gitops, a root whose mount point was remade, a cache
restored from a copy — is adopted once, by an admin who has checked it is the right one:
this command writes a new marker into it and records it in the provider's state. It
changes nothing else; the next plan reads what the root holds.

A user directory made by hand (``volume-dir/<volume>/<user>``, one that site-config wants)
is found untagged, so the plan never touches it and warns when it differs (XCE757). Adopting
it, as Terraform's ``import`` does, tags it with the site's owner: the next apply corrects its
mode and owner. Nothing on disk changes here.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compiler.cli.options import add_desired, add_workdir
from compiler.cli.runner import EXIT_OK, UsageParser, run_cli
from compiler.contract.bindings import BindingError
from compiler.contract.build_files import WORKDIR
from compiler.contract.supply_map import Entry
from compiler.core.names import did_you_mean
from compiler.core.problems import Hints, UserError
from reconciler.pipeline import Desired, default_workdir, load_desired
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.directory import AdoptedDir, DirectoryProvider
from reconciler.providers.registry import BUILTINS
from reconciler.providers.root_marker import MARKER, Adoptable, Adopted

PROG = "xce-adopt"
ADOPTABLE = ("directory", "dataset-copy")  # the built-in kinds whose roots carry markers

# the problem codes (docs/errors.md "Providers and live map"), named once
CANNOT_ADOPT = "XCE727"
NOTHING_TO_ADOPT = "XCE728"
USAGE = "XCE729"

HINTS = Hints({
    CANNOT_ADOPT: "fix what the message names (mount the volume, remove the link); nothing "
                  "was adopted",
    NOTHING_TO_ADOPT: "name a bound directory provider and one of its volumes, or a bound "
                      "dataset-copy provider",
})


class _Parser(UsageParser):
    usage_code = USAGE


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--site", type=Path, default=Path("site-config"),
                   help=f"site-config folder; the workdir defaults to <site>/{WORKDIR}")
    add_desired(p)
    add_workdir(p)
    p.add_argument("provider", help="the provider whose root it is (a directory or "
                   "dataset-copy provider of the site)")
    p.add_argument("volume", nargs="?", help="for a directory provider: the volume whose root "
                   "to adopt (shared, or volume/shared), or a user directory made by hand "
                   "(volume-dir/shared/alice); a dataset-copy provider has one root")
    return p


def _provider(desired: Desired, name: str, workdir: Path) -> tuple[Adoptable, str]:
    """The bound built-in provider ``name``, constructed in-process, and its kind."""
    bound = sorted(desired.bindings.names)
    if name not in bound:
        hint = did_you_mean(name, bound) or f"bound providers: {', '.join(bound)}"
        raise UserError([HINTS.problem(NOTHING_TO_ADOPT, f"provider '{name}' is not bound "
                                       "in the site", PROG, hint)])
    try:
        binding = desired.bindings.binding(name)
    except BindingError as err:
        raise UserError([HINTS.problem(NOTHING_TO_ADOPT, str(err), name)]) from None
    if binding.kind not in ADOPTABLE:
        message = (f"provider '{name}' is a {binding.kind} provider: only directory and "
                   "dataset-copy providers have roots to adopt")
        raise UserError([HINTS.problem(NOTHING_TO_ADOPT, message, name)])
    module, cls = BUILTINS[binding.kind]
    try:
        made: Adoptable = getattr(importlib.import_module(module), cls)(
            name, binding.params, workdir)
    except (ProviderError, OSError) as err:
        raise UserError([HINTS.problem(CANNOT_ADOPT, f"provider '{name}' cannot start: {err}",
                                       name)]) from None
    return made, binding.kind


def _lines(name: str, adopted: Adopted) -> str:
    ref, mark = adopted.ref, adopted.mark
    before = (f"  before: {adopted.was}" if adopted.was is not None
              else "  it carried the recorded marker already; it now carries a new one")
    return (f"{PROG}: adopted {ref.shown} as the root of {ref.root} (provider {name}): "
            f"marker {MARKER}, id {mark.id}, filesystem {mark.fs}\n{before}\n"
            "  nothing else was changed; the next plan reads what the root holds\n")


def _dir_lines(name: str, adopted: AdoptedDir, wanted: Entry) -> str:
    spec, want = adopted.found.spec, wanted.spec
    if adopted.already:
        return (f"{PROG}: {adopted.id} ({adopted.shown}) was managed already (provider "
                f"{name}); nothing was changed\n")
    return (f"{PROG}: adopted {adopted.shown} as {adopted.id} (provider {name})\n"
            f"  found: mode {spec.get('mode')}, owner {spec.get('owner')}; site-config: mode "
            f"{want.get('mode')}, owner {want.get('owner')}\n"
            "  nothing on disk was changed; the next apply sets what differs\n")


def _adopt_dir(desired: Desired, provider: Adoptable, name: str, target: str) -> str:
    """Adopt the user directory ``target`` (``volume-dir/<volume>/<user>``) that site-config
    binds to provider ``name``: one config does not want would be an orphan once ours."""
    wanted = desired.supply.entries.get(target)
    parts = target.split("/")
    if not isinstance(provider, DirectoryProvider) or len(parts) != 3:
        raise UserError([HINTS.problem(NOTHING_TO_ADOPT, f"{target}: name a user directory "
                                       "of a directory provider, volume-dir/VOLUME/USER", name)])
    if wanted is None or wanted.provider != name:
        raise UserError([HINTS.problem(CANNOT_ADOPT, f"{target} is not in site-config for "
                                       f"provider '{name}': adopted, it would be an orphan of "
                                       "the next plan", name, "add the user to the volume's "
                                       "users in site-config first; nothing was adopted")])
    try:
        adopted = provider.adopt_dir(parts[1], parts[2], desired.supply.owner or "")
    except ProviderError as err:
        code = NOTHING_TO_ADOPT if err.code is ErrorCode.INVALID_ARGUMENT else CANNOT_ADOPT
        raise UserError([HINTS.problem(code, err.message, name)]) from None
    return _dir_lines(name, adopted, wanted)


def _adopt_root(desired: Desired, provider: Adoptable, name: str, kind: str,
                volume: str | None) -> Adopted:
    """Adopt the root of ``volume`` (a directory provider's; none: a dataset-copy
    provider's one root), with the entry site-config binds to provider ``name``, if any."""
    entry: dict[str, Any] | None = None
    if kind == "directory" and volume is not None:
        found = desired.supply.entries.get(f"volume/{volume}")
        if found is not None and found.provider == name:
            entry = found.to_json()
    try:
        return provider.adopt(volume, entry, desired.supply.owner or "")
    except ProviderError as err:
        code = NOTHING_TO_ADOPT if err.code is ErrorCode.INVALID_ARGUMENT else CANNOT_ADOPT
        raise UserError([HINTS.problem(code, err.message, name)]) from None


def _body(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    site = None if args.desired is not None else args.site
    desired = load_desired(site, args.desired)
    workdir = args.workdir if args.workdir is not None else default_workdir(site, args.desired)
    provider, kind = _provider(desired, args.provider, Path(workdir))
    try:
        if (args.volume or "").startswith("volume-dir/"):
            sys.stdout.write(_adopt_dir(desired, provider, args.provider, args.volume))
            return EXIT_OK
        volume = (args.volume or "").removeprefix("volume/") or None
        adopted = _adopt_root(desired, provider, args.provider, kind, volume)
    finally:
        provider.close()
    sys.stdout.write(_lines(args.provider, adopted))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
