"""The jobs the recorded stacks beside this folder were taken from (see ../README.md); never imported."""
