"""webdataset: the training loop iterates a WebDataset over tar shards read through a pipe (`pipe:` URLs, as
shards streamed from object storage are: a command that is slow to deliver), decoding each sample in the loop's
own thread. The shards are written first, to a temporary folder."""

import io
import os
import tarfile
import tempfile

import webdataset as wds

folder = tempfile.mkdtemp()
for shard in range(4):
    with tarfile.open(os.path.join(folder, f"shard-{shard}.tar"), "w") as tar:
        for n in range(50):
            data = os.urandom(64 << 10)
            info = tarfile.TarInfo(f"{shard:02d}{n:04d}.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
# Each shard is delivered slowly: 64 KiB every 20 ms.
urls = [f"pipe:pv -q -L 3M {folder}/shard-{shard}.tar" for shard in range(4)]


def decode(sample):
    return sum(sample["bin"][:256])


def main() -> None:
    while True:
        for value in wds.WebDataset(urls, shardshuffle=False).map(decode):
            pass


main()
