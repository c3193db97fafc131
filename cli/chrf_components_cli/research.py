"""The researchers' commands: `score` (explain a corpus score), `segments` (score every segment), `compare`
(systems against a baseline, with significance)."""

from __future__ import annotations

import argparse
import json
import sys

from chrf_core import Report, score_text
from chrf_core.arrays import json_lines, score_texts

from .common import (
    CommandError,
    input_roles,
    open_inputs,
    refuse_over_inputs,
    same_file_key,
    settings_from,
    write_output,
)
from .lines import aligned_chunks, check_line_counts


def command_score(args: argparse.Namespace) -> int:
    from . import corpus, pages, text

    if args.html == "-" and args.json:
        raise CommandError("--html - and --json both write to standard output; choose one")
    if args.width is not None and not (args.score_only and 0 <= args.width <= 16):
        raise CommandError("-w/--width goes with -b/--score-only: decimals from 0 to 16")
    settings = settings_from(args)
    inputs = input_roles(args)
    read = [*inputs.hypotheses, *inputs.references]
    if args.html:
        refuse_over_inputs("--html", args.html, read)
    files = open_inputs((inputs.hypotheses[0], "HYP_FILE"), *[(name, "REF_FILE") for name in inputs.references])
    progress = corpus.progress_printer(files)
    try:
        result = corpus.score_files(files[0], files[1:], settings, per_segment=bool(args.html),
                                    worst=5 if args.html else 0, progress=progress)
    finally:
        corpus.finish_progress(progress)
        for file in files:
            file.close()
    report = settings.report(result.counts)
    if args.html:
        write_output(args.html, pages.score_page(report, inputs.hypotheses[0], ", ".join(inputs.references),
                                                 result.facts, result.histogram, result.worst), read)
        if args.html == "-":
            return 0
    if args.score_only:
        print(score_text(report.exact, 1 if args.width is None else args.width))
    elif args.json:
        print(text.report_json(report.to_dict(), inputs, settings))
    else:
        print(text.table(report, result.facts, inputs))
    return 0


def command_segments(args: argparse.Namespace) -> int:
    from . import corpus, text

    settings = settings_from(args)
    inputs = input_roles(args)
    if args.worst is not None and args.worst < 1:
        raise CommandError("--worst: must be a positive number of segments")
    files = open_inputs((inputs.hypotheses[0], "HYP_FILE"), *[(name, "REF_FILE") for name in inputs.references])
    try:
        if args.worst:
            progress = corpus.progress_printer(files)
            try:
                result = corpus.score_files(files[0], files[1:], settings, per_segment=True, worst=args.worst,
                                            progress=progress)
            finally:
                corpus.finish_progress(progress)
            print(text.worst_segments(result.worst, result.counts.segment_count, settings, sys.stdout.isatty(),
                                      inputs))
            return 0
        out = sys.stdout
        line = 1
        check_line_counts(files)  # every line is printed as it is scored: a mismatch must show first
        for hypotheses, *references in aligned_chunks(files):
            counts = settings.segment_counts(hypotheses, references, references_per_segment=False)
            if args.json:
                out.write(json_lines(settings, counts, line))
            else:
                scores = score_texts(settings, counts)
                out.write("".join(f"{line + index}\t{score}\n" for index, score in enumerate(scores)))
            line += len(hypotheses)
    finally:
        for file in files:
            file.close()
    return 0


def command_compare(args: argparse.Namespace) -> int:
    import numpy as np

    from . import compare, corpus, pages, text

    settings = settings_from(args)
    if args.html == "-" and args.json:
        raise CommandError("--html - and --json both write to standard output; choose one")
    if not 1 <= args.bootstrap <= compare.MAX_RESAMPLES or not 0 <= args.randomization <= compare.MAX_RESAMPLES:
        raise CommandError(f"--bootstrap must be from 1 and --randomization from 0, both to {compare.MAX_RESAMPLES}")
    if args.seed < 0:
        raise CommandError(f"--seed must be 0 or more, got {args.seed}")
    inputs = input_roles(args, systems=True)
    names = inputs.hypotheses
    if len(set(map(same_file_key, names))) != len(names):
        raise CommandError("BASELINE and SYSTEM files must be different files")
    if args.html:
        refuse_over_inputs("--html", args.html, [*names, *inputs.references])
    files = open_inputs(*[(name, "SYSTEM" if index else "BASELINE") for index, name in enumerate(names)],
                        *[(name, "REF") for name in inputs.references])
    parts: list[compare.Blocks] = [[] for _ in names]
    progress = corpus.progress_printer(files)
    try:
        segments = 0
        for chunk in aligned_chunks(files):
            outputs, references = chunk[:len(names)], chunk[len(names):]
            counts = settings.system_counts(outputs, references, references_per_segment=False)  # each counted once
            for index, system in enumerate(counts):
                parts[index].append(system.reshape(len(outputs[0]), -1).astype(np.int32))
            segments += len(outputs[0])
            if progress:
                progress(segments)
    finally:
        corpus.finish_progress(progress)
        for file in files:
            file.close()
    reports, systems = compare.compare(settings, names, parts, args.bootstrap, args.randomization, args.seed)
    result = {"baseline": names[0], **Report.signed({}, settings, len(inputs.references)),
              "references": inputs.references, "systems": systems}
    method = (f"paired approximate randomization, {args.randomization} trials" if args.randomization
              else f"paired bootstrap resampling, {args.bootstrap} resamples") + f", seed {args.seed}"
    if args.html:
        write_output(args.html, pages.compare_page(result, ", ".join(inputs.references), reports, method),
                     [*names, *inputs.references])
        if args.html == "-":
            return 0
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(text.compare_table(systems, reports[0], method, inputs.references))
    return 0
