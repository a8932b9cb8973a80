"""tf.data: the training loop takes each batch from a pipeline whose map is slow (a py_function that sleeps, as
a decoder that cannot keep up does): the main thread waits in the iterator's next."""

import time

import tensorflow as tf


def decode(x):
    time.sleep(0.05)
    return x


def slow(x):
    return tf.py_function(decode, [x], tf.int64)


dataset = tf.data.Dataset.range(10**9).map(slow).batch(4)


def main() -> None:
    for batch in dataset:
        tf.reduce_sum(batch)


main()
