"""Tests of the project rather than of a module: import contracts, the docs and the examples (Kubernetes
manifests, Prometheus rules) kept true to the code, the layout of tests/, no process left behind."""
