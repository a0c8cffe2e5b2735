"""Differential tests against Apache Pulsar (a package, so its conftest does not shadow tests/conftest.py)."""
