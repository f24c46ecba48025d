"""``coriolis-ros bag``: the command's arguments checked, the bags processed, the results
printed (:mod:`.bag` does the work; :mod:`coriolis_ros.cli` parses the command line)."""

from __future__ import annotations

import sys

from . import bag_task_space

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def run(args) -> int:
    """``coriolis-ros bag``: check the arguments, process the bags, print a line per bag;
    the exit code (0, 1 if a bag failed, 2 for bad arguments)."""
    from pathlib import Path

    from coriolis_ros.offline import bag as offline
    from coriolis_ros.offline import parquet

    def usage(message: str) -> int:
        print(f"coriolis-ros bag: error: {message}", file=sys.stderr)
        return EXIT_USAGE

    args.bags = offline.expand_bags(args.bags)
    if args.output and len(args.bags) > 1:
        return usage("-o/--output takes one bag; use --output-dir for several")
    if not args.observer_max_gap > 0:
        return usage("--observer-max-gap must be positive")
    if not args.observer_gain > 0:
        return usage("--observer-gain must be positive")
    if not args.mimic_tolerance >= 0:
        return usage("--mimic-tolerance must be zero or positive")
    if args.jobs is not None and args.jobs < 1:
        return usage("--jobs must be at least 1")
    if not args.base_state_timeout > 0:
        return usage("--base-state-timeout must be positive")
    if args.odometry_topic and args.root_joint == "fixed":
        return usage("--odometry-topic needs --root-joint floating or planar")
    fields = offline.TERM_FIELDS
    if args.fields:
        fields = tuple(f.strip() for f in args.fields.split(",") if f.strip())
        unknown = sorted(set(fields) - set(offline.TERM_FIELDS))
        if unknown:
            return usage(f"unknown --fields {unknown}: choose from {list(offline.TERM_FIELDS)}")
    try:
        task = bag_task_space.spec_from_args(args)
    except ValueError as exc:
        return usage(str(exc))
    urdf = None
    if args.urdf:
        try:
            urdf = Path(args.urdf).read_text(encoding="utf-8")
        except OSError as exc:
            return usage(f"cannot read --urdf: {exc}")
    model_options = dict(rotor_model=args.rotor_model)
    if args.independent_joints:
        model_options["independent_joints"] = list(args.independent_joints)
    if args.rotors:
        from coriolis_ros.dynamics.couplings import load_rotors

        try:
            model_options["rotors"] = load_rotors(args.rotors)
        except ValueError as exc:
            return usage(str(exc))
    try:
        import rosbags  # noqa: F401
    except ImportError:
        return usage("reading bags needs rosbags: pip install coriolis_ros[bag]")
    fmt = args.format or "npz"
    if args.output:
        is_parquet = Path(args.output).suffix == parquet.SUFFIX
        if args.format and (args.format == "parquet") != is_parquet:
            return usage(f"--format {args.format} contradicts -o {args.output}")
        fmt = "parquet" if is_parquet else "npz"
        outputs = [args.output]
    else:
        outputs = [str(offline.default_output(b, args.output_dir, fmt)) for b in args.bags]
    if fmt == "parquet" and not parquet.available():
        return usage("Parquet output needs pyarrow: pip install coriolis_ros[parquet]")
    if len(set(outputs)) != len(outputs):
        return usage("several bags would write the same output file; use --output-dir")
    options = dict(
        urdf=urdf,
        gravity=tuple(args.gravity),
        joint_states_topic=args.joint_states_topic,
        robot_description_topic=args.robot_description_topic,
        fields=fields,
        write_bag_storage=args.write_bag,
        plot=args.plot,
        observer_gain=args.observer_gain,
        observer_max_gap=args.observer_max_gap,
        mimic=args.mimic,
        mimic_tolerance=args.mimic_tolerance,
        strict=args.strict,
        root_joint=args.root_joint,
        odometry_topic=args.odometry_topic,
        base_state_timeout=args.base_state_timeout,
        task=task,
        model_options=model_options,
    )
    progress = offline.Progress(len(args.bags), enabled=False if args.no_progress else None)
    try:
        results = offline.process_bags(args.bags, outputs, options, args.jobs, progress)
    finally:
        progress.close()
    failed = 0
    for r in results:
        if not r.ok:
            failed += 1
            print(f"coriolis-ros bag: error: {r.error}", file=sys.stderr)
            continue
        spent = sum(r.seconds.values())
        line = f"{r.bag}: {r.rows} joint states ({r.duration:.1f} s recorded) in {spent:.2f} s"
        print(f"{line} -> {', '.join(r.files)}")
        stages = ("read", "compute", "write")
        print("  " + ", ".join(f"{stage} {r.seconds[stage]:.2f} s" for stage in stages))
        for reason, count in sorted(r.skipped.items()):
            print(f"  skipped {count} messages: {reason}")
        for note in r.notes:
            print(f"  note: {note}")
    return EXIT_FAILED if failed else EXIT_OK
