"""Where the collection's modules spend their time in a playbook run: each module call under cProfile, the
profiles summed per module.

``profiling_interpreter`` writes a script to give ansible-playbook as ``ansible_python_interpreter``: it runs
the module's AnsiballZ payload (which runs the module in the same process) under cProfile, one profile file
per call, named after the module. ``report`` sums them per module and says, per call (medians and sums):

  seconds     the profiled time of the call (start-up imports included, the interpreter's own start-up not)
  imports     of which importing modules (the kubernetes client, mostly)
  waiting     of which blocked on the network or a timer: reading a socket, select/poll, sleep. It is where
              the module waits for the API server's answers and for the cluster's watch events, so it holds
              the API server's own time for each request as well as the waiting the modules report
  own         the rest: our Python and the libraries it calls (JSON, the kubernetes client, the TLS stack)

then, for each module, the collection's functions with the most cumulative time and the functions (any
library) with the most own time outside waiting.

Run alone on the profiles of an earlier run:  python tests/bench/module_profiles.py DIR [--top N]
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import pstats
import re
import shlex
import statistics

OURS = "ansible_collections/kubeops/rotation/"
# Built-ins whose own time is blocking on a socket, a file descriptor or a timer.
BUILT_IN = re.compile(r"<(?:built-in )?method '?([\w.]+)'?")
WAITING = ("recv", "recv_into", "read", "select", "poll", "sleep", "connect", "do_handshake", "acquire")


# Run by the interpreter script as: python -c PROFILED <profile file> <payload> [args]. Not `python -m cProfile`:
# the payload takes its own folder out of sys.path, and it would take cProfile's, the standard library's.
PROFILED = """
import cProfile, runpy, sys
profile_file, sys.argv = sys.argv[1], sys.argv[2:]
profiler = cProfile.Profile()
try:
    profiler.runcall(runpy.run_path, sys.argv[0], run_name="__main__")
finally:
    profiler.dump_stats(profile_file)
"""


def profiling_interpreter(python, profile_dir, path):
    """A script at ``path`` that runs ``python`` on an AnsiballZ payload under cProfile, writing the profile
    to ``profile_dir`` as <module>-<nanoseconds>-<pid>.prof; returns ``path``."""
    os.makedirs(profile_dir, exist_ok=True)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n"
                     "# ansible-playbook runs: <interpreter> <dir>/AnsiballZ_<module>.py\n"
                     'module=$(basename "$1" .py)\n'
                     'exec %s -c %s %s/"${module#AnsiballZ_}-$(date +%%s%%N)-$$.prof" "$@"\n'
                     % (shlex.quote(python), shlex.quote(PROFILED), shlex.quote(profile_dir)))
    os.chmod(path, 0o755)
    return path


def is_waiting(key):
    """Whether ``key`` is a built-in that blocks: "<method 'read' of '_ssl._SSLSocket' objects>",
    "<built-in method time.sleep>"..."""
    filename, _line, function = key
    found = BUILT_IN.match(function) if filename == "~" else None
    return bool(found) and found.group(1).rsplit(".", 1)[-1] in WAITING


def is_import(key):
    return key[2] == "_find_and_load"


def label(key):
    filename, line, function = key
    if OURS in filename:
        return "%s:%s" % (filename.split(OURS, 1)[1], function)
    if filename == "~":
        return function
    return "%s:%d:%s" % ("/".join(filename.split("/")[-2:]), line, function)


def call_figures(stats):
    """seconds, imports, waiting and own of one profiled call."""
    entries = stats.stats
    seconds = stats.total_tt
    imports = max((entry[3] for key, entry in entries.items() if is_import(key)), default=0.0)
    waiting = sum(entry[2] for key, entry in entries.items() if is_waiting(key))
    return {"seconds": seconds, "imports": imports, "waiting": waiting, "own": seconds - imports - waiting}


def by_module(profile_dir):
    """{module: [profile path, ...]} of the profiles in ``profile_dir``."""
    found = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(profile_dir, "*.prof"))):
        found[os.path.basename(path).rsplit("-", 2)[0]].append(path)
    return found


def by_function(stats):
    """{label: [own seconds, cumulative seconds]} of merged profiles: each call's payload has a folder of its
    own, so the same function has a key per call until labelled."""
    functions = collections.defaultdict(lambda: [0.0, 0.0])
    for key, entry in stats.stats.items():
        if not is_waiting(key):
            functions[label(key)][0] += entry[2]
        functions[label(key)][1] += entry[3]
    return functions


def summarize(profile_dir, top=10):
    """Per module: calls, the median and the sum of each figure, and its top functions."""
    modules = {}
    for module, paths in by_module(profile_dir).items():
        calls = [call_figures(pstats.Stats(path)) for path in paths]
        functions = by_function(pstats.Stats(*paths))
        ours = sorted(((cumulative, own, name) for name, (own, cumulative) in functions.items()
                       if name.startswith("plugins/")), reverse=True)[:top]
        busy = sorted(((own, cumulative, name) for name, (own, cumulative) in functions.items()), reverse=True)[:top]
        modules[module] = {
            "calls": len(calls),
            "median": {figure: statistics.median(call[figure] for call in calls) for figure in calls[0]},
            "sum": {figure: sum(call[figure] for call in calls) for figure in calls[0]},
            "ours_cumulative": [{"seconds": cumulative, "own": own, "function": name}
                                for cumulative, own, name in ours],
            "own_time": [{"seconds": own, "cumulative": cumulative, "function": name}
                         for own, cumulative, name in busy],
        }
    return modules


def print_report(modules):
    header = "%-20s %5s %9s %9s %9s %9s   %9s %9s %9s" % (
        "module", "calls", "median s", "imports", "waiting", "own", "sum s", "waiting", "own")
    print(header)
    print("-" * len(header))
    for module, row in sorted(modules.items(), key=lambda item: -item[1]["sum"]["seconds"]):
        median, total = row["median"], row["sum"]
        print("%-20s %5d %9.2f %9.2f %9.2f %9.2f   %9.1f %9.1f %9.1f" % (
            module, row["calls"], median["seconds"], median["imports"], median["waiting"], median["own"],
            total["seconds"], total["waiting"], total["own"]))
    for module, row in sorted(modules.items(), key=lambda item: -item[1]["sum"]["own"]):
        print("\n%s (%d calls), the collection's functions by cumulative seconds (own seconds):" % (
            module, row["calls"]))
        for entry in row["ours_cumulative"]:
            print("  %8.2f (%6.2f)  %s" % (entry["seconds"], entry["own"], entry["function"]))
        print("  the functions with the most own seconds, waiting aside (cumulative):")
        for entry in row["own_time"]:
            print("  %8.2f (%6.2f)  %s" % (entry["seconds"], entry["cumulative"], entry["function"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile_dir")
    parser.add_argument("--top", type=int, default=10, help="functions listed per module (default %(default)s)")
    args = parser.parse_args()
    print_report(summarize(args.profile_dir, args.top))


if __name__ == "__main__":
    main()
