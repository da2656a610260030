"""The version string the release writes into its own source (setuptools-scm's _version.py)."""

from compat.probes import _ast, probe

probe("vllm", "version_in_source", "Version written in the source", order=10)(_ast.version_in_source)
