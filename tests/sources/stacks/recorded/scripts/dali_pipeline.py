"""NVIDIA DALI on the CPU (device_id=None): a pipeline of heavy CPU operators (a 31-tap Gaussian blur of a
1024 x 1024 image, one DALI thread), iterated with the PyTorch plugin's DALIGenericIterator: the loop waits for
the pipeline's outputs while DALI's own threads work."""

from nvidia.dali import fn, pipeline_def
from nvidia.dali.plugin.pytorch import DALIGenericIterator


@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def images():
    noise = fn.random.uniform(range=[0.0, 255.0], shape=[1024, 1024, 3])
    return fn.gaussian_blur(noise, window_size=31)


def main() -> None:
    pipe = images()
    pipe.build()
    while True:
        for _ in DALIGenericIterator(pipe, ["images"], size=10**6):
            pass


main()
