"""Command line: ``python -m vlbias plan|precompute|run|build|list|open|tiny|rehearsal|audit``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m vlbias", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="execute notebooks with papermill, then build the book")
    run.add_argument("--profile", default="demo", help="a profile name from params/ (demo or full) or the path of a YAML file")
    run.add_argument("--only", action="append", default=[], metavar="NAME",
                     help="run only this notebook (file stem); repeatable")
    run.add_argument("--set", action="append", default=[], dest="assignments", metavar="KEY=VALUE",
                     help="override a parameter (YAML value); NOTEBOOK.KEY=VALUE for one notebook")
    run.add_argument("--timeout", type=float, default=None,
                     help="seconds allowed per notebook (default: the profile's timeouts, else 1800)")
    run.add_argument("--part", type=int, default=None, help="run only the notebooks of this part (1-4)")
    run.add_argument("--jobs", default=None, metavar="N",
                     help="notebooks to run at once, 1 or more (default: the machine's cores, capped by free memory); "
                          "a notebook that reads another's outputs waits for it")
    run.add_argument("--no-build", action="store_true", help="execute only; do not build the book")
    run.add_argument("--project-dir", type=Path, default=None, help="the book's repository (default: here)")

    plan = commands.add_parser("plan", help="preflight, offline: data, models, GPU-hours, disk and timeouts "
                                            "per notebook; exits 1 with what to fix")
    _plan_arguments(plan)

    pre = commands.add_parser("precompute", help="run the plan's heavy stages (embeddings, ColorFoil scores, "
                                                 "generated images) on Ray, into the caches the notebooks read")
    _plan_arguments(pre)
    pre.add_argument("--ray", default=None, metavar="ADDRESS",
                     help="join this Ray cluster (e.g. ray://head:10001 or head:6379); default: a local instance")
    pre.add_argument("--workers", type=int, default=None, help="Ray actors per pool (default: as many as fit)")
    pre.add_argument("--threads", type=int, default=None, help="CPU threads per actor (default: CPUs / workers)")
    pre.add_argument("--gpu-fraction", type=float, default=0.25,
                     help="GPU share of an actor running an image-text model (Stable Diffusion takes a whole GPU)")

    build = commands.add_parser("build", help="build the book from the executed notebooks")
    build.add_argument("--project-dir", type=Path, default=None)

    listing = commands.add_parser("list", help="list notebooks and their parameters")
    listing.add_argument("--project-dir", type=Path, default=None)

    opening = commands.add_parser("open", help="open a notebook in JupyterLab with a profile's parameters injected")
    opening.add_argument("name", help="notebook (file stem), e.g. 01b_markedness")
    opening.add_argument("--profile", default="demo")
    opening.add_argument("--set", action="append", default=[], dest="assignments", metavar="KEY=VALUE")
    opening.add_argument("--no-launch", action="store_true", help="only write work/NAME.PROFILE.ipynb")
    opening.add_argument("--project-dir", type=Path, default=None)

    tiny = commands.add_parser("tiny", help="build the tiny: fixture checkpoints and print where they are")
    tiny.add_argument("names", nargs="*", help="tiny model names (default: all)")

    audit = commands.add_parser("audit", help="write a bias card per model: every measure of the book that applies "
                                              "to its kind, with a profile's parameters (outputs/PROFILE/cards)")
    audit.add_argument("specs", nargs="+", metavar="SPEC",
                       help="model specs: hub id, open_clip name/tag, directory, asset:, trained: or tiny:")
    audit.add_argument("--profile", default="demo", help="whose notebook parameters the measures use")
    audit.add_argument("--parts", nargs="+", default=None, help="only these parts' measures (markedness, colorfoil, ...)")
    audit.add_argument("--out", type=Path, default=None, help="the card folder (default: outputs/PROFILE/cards)")
    audit.add_argument("--project-dir", type=Path, default=None)
    audit.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                       help="run the heavy stages (embeddings, scores, images) on Ray first, through precompute's "
                            "executor: a cluster's address (e.g. ray://head:10001), or none for a local instance")

    rehearsal = commands.add_parser("rehearsal", help="the full profile's dress rehearsal: a local hub mirror of "
                                                      "random-weight checkpoints, and the data sets at small size")
    rehearsal.add_argument("action", choices=["list", "build", "data"],
                           help="list: what the mirror holds or cannot; build: write it; data: write the data sets")
    rehearsal.add_argument("folder", type=Path, nargs="?", help="the mirror (use as HF_HOME) or the data folder "
                                                                 "(use as VLBIAS_DATA_DIR)")
    rehearsal.add_argument("--only", action="append", default=[], metavar="SPEC", help="this model spec only; repeatable")
    rehearsal.add_argument("--part", type=int, default=None,
                           help="only the checkpoints that this part's notebooks name (as run --part)")
    rehearsal.add_argument("--cpu", action="store_true",
                           help="build the generative vision-language models shallow, at full width, so that their "
                                "pages finish on a CPU (vlbias.rehearsal.CPU_DEPTH_REDUCTIONS); the GPU rehearsal omits it")
    rehearsal.add_argument("--profile", default="full")
    rehearsal.add_argument("--project-dir", type=Path, default=None)
    return parser


def _rehearsal(args) -> int:
    from . import rehearsal

    if args.action == "data":
        if args.folder is None:
            raise SystemExit("rehearsal data: give the folder to write the data sets into (then VLBIAS_DATA_DIR=FOLDER)")
        for name, folder in rehearsal.write_rehearsal_data(args.folder).items():
            print(f"{name}\t{folder}")
        return 0
    specs = rehearsal.profile_specs(args.profile, args.project_dir, args.part)
    if args.only:
        unknown = sorted(set(args.only) - set(specs))
        if unknown:
            raise SystemExit(f"rehearsal: --only {', '.join(unknown)}: not a spec of the {args.profile} profile; "
                             f"its specs: {', '.join(specs)}")
        specs = {spec: specs[spec] for spec in args.only}
    targets = rehearsal.mirror_targets(specs, cpu=args.cpu)
    if args.action == "list":
        for target in targets:
            built = target.builder + (f" ({target.reason})" if target.reason else "") if target.builder else ""
            print(f"{target.spec}\t{target.repo_id}\t{built or 'cannot build: ' + target.reason}")
        return 0
    if args.folder is None:
        raise SystemExit("rehearsal build: give the mirror folder (then HF_HOME=FOLDER HF_HUB_OFFLINE=1)")
    rows = rehearsal.build_mirror(args.folder, targets)
    for row in rows:
        print(f"{row['status']}\t{row['spec']}\t{row['repo']}\t{row['gb']:.2f} GB\t{row['reason']}")
    return 0


def _plan_arguments(parser: argparse.ArgumentParser) -> None:
    """What selects a plan: the preflight and precompute take the same."""
    parser.add_argument("--profile", default="full", help="parameter file params/<profile>.yml")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="this notebook only; repeatable")
    parser.add_argument("--part", type=int, default=None, help="only the notebooks of this part (as run --part)")
    parser.add_argument("--set", action="append", default=[], dest="assignments", metavar="KEY=VALUE",
                        help="a parameter as the run would get it")
    parser.add_argument("--project-dir", type=Path, default=None)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from . import profiles, runner

    try:
        if args.command == "run":
            return runner.run(args.profile, args.only, args.assignments, args.project_dir,
                              timeout=args.timeout, build=not args.no_build, part=args.part, jobs=args.jobs)
        if args.command == "plan":
            from . import plan

            return plan.main(args.profile, args.only, args.project_dir, args.assignments, part=args.part)
        if args.command == "precompute":
            from . import precompute

            return precompute.main(args.profile, args.only, args.project_dir, args.assignments, args.ray,
                                   args.workers, args.threads, args.gpu_fraction, part=args.part)
        if args.command == "build":
            return runner.build_book(profiles.find_project_root(args.project_dir))
        if args.command == "list":
            root = profiles.find_project_root(args.project_dir)
            for name, path in profiles.list_notebooks(root).items():
                print(f"{name}: {', '.join(sorted(profiles.declared_parameters(path)))}")
            return 0
        if args.command == "open":
            from .open_notebook import open_notebook

            return open_notebook(args.name, args.profile, args.assignments, args.project_dir,
                                 launch=not args.no_launch)
        if args.command == "rehearsal":
            return _rehearsal(args)
        if args.command == "audit":
            from . import audit, precompute
            from .errors import ModelUnavailableError

            try:
                return audit.main(args.specs, args.profile, args.parts, args.out, args.project_dir, args.ray)
            except (ValueError, FileNotFoundError, ModelUnavailableError, precompute.PrecomputeError) as error:
                print(f"error: {error}", file=sys.stderr)
                return 2
        if args.command == "tiny":
            from .models import load_tiny_builders, tiny_checkpoint

            for name in args.names or sorted(load_tiny_builders()):
                print(f"tiny:{name}\t{tiny_checkpoint(name)}")
            return 0
    except profiles.RunnerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
