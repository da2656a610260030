"""compat: make EAGLE-3 drafters work on the vLLM and SGLang releases people run.

Data flow, visible in the repository layout:
    sources (compat/sources)  -> probes (probes/)      -> report (compat/report.py)
    sources                   -> patches (patches/)    -> record (compat/patching.py)
    checkpoint                -> layout (checkpoints/) -> checkpoint (compat/convert/)
"""

__version__ = "0.1.0"
