"""Probes of an SGLang release. One fact per module; see probes/__init__.py."""
