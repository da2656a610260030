"""The version SGLang's own files declare: sglang/version.py, or setuptools-scm's _version.py (0.5.7+)."""

from compat.probes import _ast, probe

probe("sglang", "version_in_source", "Version declared in the source", order=10)(_ast.version_in_source)
