"""Probes of an LMDeploy release. One fact per module; see probes/__init__.py."""
