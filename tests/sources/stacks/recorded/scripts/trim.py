"""py-spy's speedscope JSON as a fixture: the frames no sample uses dropped, the timings' weights kept, the files cut
to their package part as py-spy prints them without --full-filenames where it can (after site-packages, or the
standard library's folder; the job's own script to its name), and the paths in the command line of py-spy's own
"process" frames cut to their file names: they name this machine's folders. Names and lines are py-spy's."""

from __future__ import annotations

import json
import re
import sys

from gputui.sources.stacks.classify import short_file

COMMAND = re.compile(r'^(process [0-9]+:")(.*)(")$')


def short_command(name: str) -> str:
    match = COMMAND.match(name)
    if match is None:
        return name
    words = " ".join(word.rsplit("/", 1)[-1] for word in match.group(2).split(" "))
    return f"{match.group(1)}{words}{match.group(3)}"


def short_path(file: str) -> str:
    short = short_file(file)
    return short.rsplit("/", 1)[-1] if short.startswith("/") else short


def main() -> None:
    data = json.load(open(sys.argv[1]))
    frames = data["shared"]["frames"]
    used = sorted({index for profile in data["profiles"] for sample in profile["samples"] for index in sample})
    new = {old: at for at, old in enumerate(used)}
    data["shared"]["frames"] = [
        {**frames[old], "name": short_command(frames[old]["name"]), "file": short_path(frames[old]["file"])}
        for old in used
    ]
    for profile in data["profiles"]:
        profile["samples"] = [[new[index] for index in sample] for sample in profile["samples"]]
    json.dump(data, sys.stdout, separators=(",", ":"))


if __name__ == "__main__":
    main()
