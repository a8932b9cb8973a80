"""Hugging Face datasets streaming: the loop iterates a streamed (IterableDataset) JSON dataset, mapping each
example in its own thread. The files are written first; a real stream reads them over the network through the
same xopen/read_with_retries path."""

import json
import os
import tempfile

os.environ["HF_DATASETS_OFFLINE"] = "1"
from datasets import load_dataset  # noqa: E402

folder = tempfile.mkdtemp()
files = []
for shard in range(8):
    path = os.path.join(folder, f"part-{shard}.jsonl")
    with open(path, "w") as handle:
        for n in range(20000):
            handle.write(json.dumps({"text": f"example {shard} {n} " * 20, "label": n % 10}) + "\n")
    files.append(path)


def tokenize(example):
    return {"ids": [ord(c) for c in example["text"]]}


def main() -> None:
    while True:
        for example in load_dataset("json", data_files=files, split="train", streaming=True).map(tokenize):
            pass


main()
