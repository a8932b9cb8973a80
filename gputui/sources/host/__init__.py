"""This machine beside the GPUs: psutil, /proc, cgroups, PSI, the process join, the local torch build."""
