"""The native kernel's files read in one order, the one kernel.h gives: every file includes and calls only files
above it (so the file graph has no loop), every file is in the order, and the rules the kernel keeps once live in
one file each (one pair table, one refinement step, one pause convention, one pool of threads)."""

import re

import pytest
from support import ROOT

NATIVE = ROOT / "layers" / "chrf_core" / "native"
ORDER_LINE = re.compile(r"^ \*\s+\d+\.\s+(\S+\.[ch])\s", re.MULTILINE)


def reading_order(folder=NATIVE):
    return ORDER_LINE.findall((folder / "kernel.h").read_text(encoding="utf-8"))


def code_of(path):
    """The file's C without comments and string literals (so that a name in prose or a docstring is no use)."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def bodies(code):
    """The functions defined in code: name -> (is static, is inline, body text)."""
    found = {}
    for match in re.finditer(r"^([A-Za-z_][\w \t\*]*?)\b(\w+)\(([^;{}]*?)\)\s*\{", code, re.MULTILINE | re.DOTALL):
        depth, end = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            end += 1
        words = match.group(1).split()
        found[match.group(2)] = ("static" in words, "inline" in words, code[match.end():end])
    return found


def definitions(folder=NATIVE):
    """The functions callable from other files, by the file defining them: a .c file's non-static functions and a
    header's static inline ones."""
    owner = {}
    for path in sorted(folder.glob("*.[ch]")):
        for name, (static, inline, _) in bodies(code_of(path)).items():
            if (path.suffix == ".c" and not static) or (path.suffix == ".h" and static and inline):
                assert name not in owner, f"{name} is defined in {owner[name]} and {path.name}"
                owner[name] = path.name
    return owner


def uses(path):
    """What a file's code names: a .c file's whole code, a header's inline bodies (its prototypes are no use)."""
    code = code_of(path)
    if path.suffix == ".h":
        code = " ".join(body for static, inline, body in bodies(code).values() if static and inline)
    return set(re.findall(r"\b[A-Za-z_]\w*\b", code))


def upward_violations(folder=NATIVE):
    """Every include or call of a file below the one making it."""
    order, owner, found = reading_order(folder), definitions(folder), []
    for name in order:
        path = folder / name
        for included in re.findall(r'^#include "([^"]+)"', path.read_text(encoding="utf-8"), re.MULTILINE):
            if order.index(included) > order.index(name):
                found.append(f"{name} includes {included}, below it")
        for used in sorted(uses(path) & set(owner)):
            if owner[used] != name and order.index(owner[used]) > order.index(name):
                found.append(f"{name} calls {used} of {owner[used]}, below it")
    return found


def test_kernel_h_names_every_file_once_in_its_reading_order():
    order = reading_order()
    assert len(order) == len(set(order))
    assert set(order) == {path.name for path in NATIVE.glob("*.[ch]")}


def test_every_file_includes_and_calls_only_files_above_it():
    assert {"intern_pair", "refine", "run_pool", "parallel_rows", "corpus_build", "count_segment"} <= set(definitions())
    assert upward_violations() == []


def test_a_call_or_include_of_a_file_below_is_found(tmp_path):
    for path in NATIVE.glob("*.[ch]"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    tables = tmp_path / "tables.c"
    text = tables.read_text(encoding="utf-8").replace('#include "kernel.h"', '#include "kernel.h"\n#include "mbr.h"')
    tables.write_text(text + "\nint probe(void) { return corpus_build(0, 0, 0, 1, 0, 0, 0); }\n", encoding="utf-8")
    assert upward_violations(tmp_path) == ["tables.c includes mbr.h, below it",
                                           "tables.c calls corpus_build of corpus_ids.c, below it"]


@pytest.mark.parametrize(("rule", "pattern", "home"), [
    ("the pair table's probing", r"slot->first == first && slot->second == second", "kernel.h"),
    ("the refinement step's memo", r"memo\[0\] = unit", "classes.h"),
    ("the pause convention", r"static inline int pause_now\(", "kernel.h"),
    ("an n-gram's code from its units (the histogram start)", r"codes\[i\] \* \w+ \+ unit\[i\]", "classes.h"),
    ("the pool of threads: threads started, waited for and woken", r"pthread_(?:create|join|cond_\w+)\(", "threads.c"),
    ("a text's number of n-grams, length - n + 1", r"\w+ - (?:\(size_t\))?n \+ 1", "kernel.h"),
    ("the whitespace left out of character n-grams", r"!is_space\([^)]*\)\)\s*\w+\[\w+\+\+\] =", "kernel.h"),
    ("a text against the same text: every n-gram matches", r"\[3 \* \(n - 1\) \+ 2\] \+= \(int64_t\)", "kernel.h"),
    ("a unique pair matches while both sides continue alike", r"\w+\[i \+ n \+ same\] == \w+\[j \+ n \+ same\]",
     "kernel.h"),
    ("how many threads: at most MAX_THREADS and one per task", r"[?:] MAX_THREADS\b|&& \w+ < MAX_THREADS", "mbr.h"),
])
def test_each_rule_of_the_kernel_is_written_in_one_file(rule, pattern, home):
    files = sorted(path.name for path in NATIVE.glob("*.[ch]") if re.search(pattern, code_of(path)))
    assert files == [home], f"{rule}: {files}"


def test_every_function_of_the_kernel_is_defined_in_one_file_static_ones_included():
    homes = {}
    for path in sorted(NATIVE.glob("*.[ch]")):
        for name in bodies(code_of(path)):
            homes.setdefault(name, []).append(path.name)
    assert homes["count_by_code"] == ["classes.h"]
    assert {name: files for name, files in homes.items() if len(files) > 1} == {}


def test_every_pause_interval_is_the_one_of_kernel_h_or_written_from_it():
    intervals = [(path.name, name, value) for path in NATIVE.glob("*.[ch]")
                 for name, value in re.findall(r"^#define (\w*(?:POLL|PAUSE)\w*) (.*)$", code_of(path), re.MULTILINE)]
    assert ("kernel.h", "POLL_MASK", "0xFFFFFu") in [(path, name, value.strip()) for path, name, value in intervals]
    assert all(name == "POLL_MASK" or "POLL_MASK" in value for _, name, value in intervals), intervals


def test_work_a_pause_stops_returns_1_in_every_file_as_kernel_h_says():
    """One return convention (issue 56): 0 done, 1 stopped by the pause, -1 out of memory. Counting returned -1 when
    interrupted, the MBR calls 1. (The CPython glue, module*.c, keeps CPython's: -1 with the exception set.)"""
    stopped = re.compile(r"if \((?:poll|stop_after|pause_now|pause_within)\([^;]*\)\)\s*return (-?\d+);")
    returns = {(path.name, value) for path in NATIVE.glob("*.[ch]") if not path.name.startswith("module")
               for value in stopped.findall(code_of(path))}
    assert {value for _, value in returns} == {"1"}, returns


def test_every_build_of_the_kernel_reads_its_one_list_of_compile_flags():
    """Issue 56: the flags were written in four places and only the layer's build had -Werror, so a warning passed
    on the host and broke `sam build`. Now native/cflags is the one list: setup.py (host kernel, wheels), the
    layer's Makefile and the sanitize builds read it, none writes its own -std or warning flags, and every build this
    project makes adds -Werror."""
    files = {name: (ROOT / name).read_text(encoding="utf-8") for name in
             ("setup.py", "layers/chrf_core/Makefile", "Makefile")}
    assert "native/cflags" in files["setup.py"] and "native/cflags" in files["layers/chrf_core/Makefile"]
    assert "$(KERNEL_CFLAGS)" in files["Makefile"] and "layers/chrf_core/native/cflags" in files["Makefile"]
    for name, text in files.items():
        for flag in ("-std=c99", "-Wall", "-Wextra", "-ffp-contract=off", "-DPy_LIMITED_API=0x"):
            assert flag not in text, f"{name} writes {flag} itself"
    assert "-Werror" in files["layers/chrf_core/Makefile"]
    assert files["Makefile"].count("CHRF_WERROR=1") == 2  # make kernel and make dist's wheels
