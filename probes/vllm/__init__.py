"""Probes of a vLLM release. One fact per module; see probes/__init__.py."""
