"""The version LMDeploy's own files declare: `__version__ = '0.18.0'` in lmdeploy/version.py."""

from compat.probes import _ast, probe

probe("lmdeploy", "version_in_source", "Version declared in the source", order=10)(_ast.version_in_source)
