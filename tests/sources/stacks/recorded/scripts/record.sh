#!/bin/sh
# Records one framework's job as the fixtures beside this folder: NAME.every.json (py-spy --idle) and
# NAME.running.json (without), the same flags as gputui/sources/stacks/pyspy.py, both at once over one window.
#   record.sh NAME PYTHON SCRIPT [SETTLE_S] [DURATION_S]
# PYTHON runs SCRIPT (the framework's own venv); py-spy is the project's (.venv/bin/py-spy). The job is waited for
# SETTLE_S (default 15: imports, a first compile), recorded for DURATION_S (default 2) at 20 Hz, then killed; trim.py
# keeps what the tests read.
set -eu
name=$1 python=$2 script=$3 settle=${4:-15} duration=${5:-2}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../../.." && pwd)
out=$(mktemp -d)
"$python" "$script" > "$out/job.log" 2>&1 &
job=$!
sleep "$settle"
flags="--nonblocking --threads --subprocesses --format speedscope --rate 20 --duration $duration --pid $job"
"$root/.venv/bin/py-spy" record --idle $flags -o "$out/every.json" > "$out/every.log" 2>&1 &
every=$!
"$root/.venv/bin/py-spy" record $flags -o "$out/running.json" > "$out/running.log" 2>&1 &
running=$!
wait $every $running || true
kill "$job" 2>/dev/null || true
wait "$job" 2>/dev/null || true
for run in every running; do
    "$root/.venv/bin/python" "$here/trim.py" "$out/$run.json" > "$here/../$name.$run.json"
done
tail -3 "$out/job.log"
rm -r "$out"
